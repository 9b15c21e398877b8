// One member of a KafkaJS consumer group, run until SIGTERM (leaves the
// group and commits) or SIGKILL (says nothing). Prints a JSON line per event:
// {event: 'joined', memberId, assignment}, {event: 'message',
// partition, offset, value} once the message is processed (before KafkaJS
// may commit it), {event: 'commit', offsets}, {event: 'crash', error}.
// Request: { connection, topic, groupId, delayMs, sessionTimeout }
import { answer, client, describeError, fromBytes, readRequest } from './lib.mjs'

const request = readRequest()
const consumer = client(request.connection).consumer({
  groupId: request.groupId,
  sessionTimeout: request.sessionTimeout ?? 6000,
  heartbeatInterval: 300,
  rebalanceTimeout: request.rebalanceTimeout ?? 20000,
  maxWaitTimeInMs: 100,
  maxBytesPerPartition: request.maxBytesPerPartition ?? 4096,
})
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => answer({
  event: 'joined', memberId: payload.memberId, assignment: payload.memberAssignment,
}))
consumer.on(consumer.events.COMMIT_OFFSETS, ({ payload }) => answer({ event: 'commit', offsets: payload.topics }))
consumer.on(consumer.events.CRASH, ({ payload }) => answer({ event: 'crash', error: describeError(payload.error) }))

let stopping = false
process.on('SIGTERM', async () => {
  if (stopping) return
  stopping = true
  await consumer.disconnect()
  answer({ event: 'left' })
  process.exit(0)
})

await consumer.connect()
await consumer.subscribe({ topics: [request.topic], fromBeginning: true })
await consumer.run({
  autoCommitInterval: request.autoCommitInterval ?? 200,
  eachMessage: async ({ partition, message }) => {
    if (request.delayMs) await sleep(request.delayMs)
    answer({ event: 'message', partition, offset: Number(message.offset), value: fromBytes(message.value) })
  },
})
