"""The consumer-protocol member state machine (Kafka's CurrentAssignmentBuilder):
every transition of its table, the epoch rules and the fencing checks."""
from __future__ import annotations

import uuid

import pytest

from kcore.coordinator.group.consumer_member import (
    ConsumerGroupMember,
    FencedMemberEpoch,
    MemberState,
    check_member_epoch,
    reconcile,
)

T = uuid.UUID(int=7)
SUBSCRIBED = frozenset({T})
S = MemberState


def parts(*numbers: int) -> dict:
    return {T: frozenset(numbers)} if numbers else {}


def free(topic_id, partition) -> int:
    return -1


def held_by_other(*partitions: int):
    return lambda topic_id, partition: 3 if partition in partitions else -1


def owned(*numbers: int):
    return [(T, list(numbers))]


# (case, member before, target epoch, target, partition epochs, owned partitions) -> (state, epoch, assigned, pending)
TABLE = [
    ("stable at the target epoch stays", S.STABLE, 5, parts(0, 1), 5, parts(0, 1), free, owned(0, 1),
     (S.STABLE, 5, parts(0, 1), {})),
    ("stable -> stable: new partitions all free", S.STABLE, 5, parts(0), 6, parts(0, 1), free, owned(0),
     (S.STABLE, 6, parts(0, 1), {})),
    ("stable -> unrevoked: must revoke first", S.STABLE, 5, parts(0, 1), 6, parts(0), free, owned(0, 1),
     (S.UNREVOKED_PARTITIONS, 5, parts(0), parts(1))),
    ("stable -> unreleased: a new partition is still owned", S.STABLE, 5, parts(0), 6, parts(0, 1),
     held_by_other(1), owned(0), (S.UNRELEASED_PARTITIONS, 6, parts(0), {})),
    ("stable -> stable: revocation already done by the client", S.STABLE, 5, parts(0, 1), 6, parts(0), free,
     owned(0), (S.STABLE, 6, parts(0), {})),
    ("unrevoked stays while the client still owns a revoked partition", S.UNREVOKED_PARTITIONS, 5, parts(0),
     6, parts(0), free, owned(0, 1), (S.UNREVOKED_PARTITIONS, 5, parts(0), parts(1))),
    ("unrevoked stays when the heartbeat does not say what it owns", S.UNREVOKED_PARTITIONS, 5, parts(0),
     6, parts(0), free, None, (S.UNREVOKED_PARTITIONS, 5, parts(0), parts(1))),
    ("unrevoked -> stable once revoked", S.UNREVOKED_PARTITIONS, 5, parts(0), 6, parts(0), free, owned(0),
     (S.STABLE, 6, parts(0), {})),
    ("unrevoked -> unreleased when a new one is not free yet", S.UNREVOKED_PARTITIONS, 5, parts(0), 6,
     parts(0, 2), held_by_other(2), owned(0), (S.UNRELEASED_PARTITIONS, 6, parts(0), {})),
    ("unreleased stays while the partition is owned", S.UNRELEASED_PARTITIONS, 6, parts(0), 6, parts(0, 2),
     held_by_other(2), owned(0), (S.UNRELEASED_PARTITIONS, 6, parts(0), {})),
    ("unreleased -> stable once released", S.UNRELEASED_PARTITIONS, 6, parts(0), 6, parts(0, 2), free,
     owned(0), (S.STABLE, 6, parts(0, 2), {})),
    ("unknown -> reconciled from scratch when it owns nothing", S.UNKNOWN, 4, {}, 6, parts(3), free, [],
     (S.STABLE, 6, parts(3), {})),
]


@pytest.mark.parametrize("case", TABLE, ids=[row[0] for row in TABLE])
def test_transition(case):
    _, state, epoch, assigned, target_epoch, target, epochs, owns, expected = case
    pending = parts(1) if state is S.UNREVOKED_PARTITIONS else {}
    member = ConsumerGroupMember("m", member_epoch=epoch, previous_member_epoch=epoch - 1, state=state,
                                 assigned=assigned, pending_revocation=pending)
    after = reconcile(member, target_epoch, target, epochs, owns, SUBSCRIBED)
    assert (after.state, after.member_epoch, after.assigned, after.pending_revocation) == expected
    if after.member_epoch != member.member_epoch:
        assert after.previous_member_epoch == member.member_epoch


def test_every_state_has_a_row_leaving_it():
    assert {row[1] for row in TABLE} == set(MemberState)


def test_unknown_state_that_still_owns_partitions_is_fenced():
    member = ConsumerGroupMember("m", member_epoch=4, state=S.UNKNOWN, assigned=parts(0))
    with pytest.raises(FencedMemberEpoch):
        reconcile(member, 6, parts(0), free, owned(0), SUBSCRIBED)


def test_unsubscribed_topic_is_revoked_even_if_the_target_keeps_it():
    member = ConsumerGroupMember("m", member_epoch=5, assigned=parts(0, 1))
    after = reconcile(member, 6, parts(0, 1), free, owned(0, 1), frozenset())
    assert (after.state, after.assigned, after.pending_revocation) == (S.UNREVOKED_PARTITIONS, {}, parts(0, 1))


def test_own_partition_pending_revocation_is_not_unreleased():
    member = ConsumerGroupMember("m", member_epoch=5, state=S.UNREVOKED_PARTITIONS, assigned=parts(0),
                                 pending_revocation=parts(1))
    after = reconcile(member, 7, parts(0, 1), held_by_other(1), owned(0), SUBSCRIBED)
    assert (after.state, after.member_epoch, after.assigned) == (S.STABLE, 7, parts(0, 1))


@pytest.mark.parametrize("received,owns,fenced", [
    (5, owned(0, 1), False),        # current epoch
    (4, owned(0), False),           # previous epoch, a subset: the bump was lost
    (4, owned(0, 2), True),         # previous epoch, more than assigned
    (4, None, True),                # previous epoch without saying what it owns
    (3, owned(0), True),            # older than the previous epoch
    (6, owned(0), True),            # ahead of the coordinator
])
def test_member_epoch_checks(received, owns, fenced):
    member = ConsumerGroupMember("m", member_epoch=5, previous_member_epoch=4, assigned=parts(0, 1))
    if fenced:
        with pytest.raises(FencedMemberEpoch):
            check_member_epoch(member, received, owns)
    else:
        check_member_epoch(member, received, owns)
