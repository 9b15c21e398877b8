// A KafkaJS transactional producer runs the request's transactions in
// order: each sends its messages, optionally its consumer offsets
// (sendOffsets, the consume-transform-produce step), then commits or aborts.
// Request: { connection, transactionalId, topic, transactions: [{ messages, outcome: 'commit' | 'abort',
//            offsets?: { consumerGroupId, topics: [{ topic, partitions: [{ partition, offset }] }] } }] }
import { answer, client, describeError, outgoing, readRequest } from './lib.mjs'

const request = readRequest()
const producer = client(request.connection).producer({
  transactionalId: request.transactionalId,
  idempotent: true,
  maxInFlightRequests: 1,
  transactionTimeout: 30000,
})
const results = []
try {
  await producer.connect()
  for (const transaction of request.transactions) {
    const txn = await producer.transaction()
    try {
      const sent = await txn.send({ topic: request.topic, acks: -1, messages: transaction.messages.map(outgoing) })
      if (transaction.offsets) await txn.sendOffsets(transaction.offsets)
      if (transaction.outcome === 'commit') await txn.commit()
      else await txn.abort()
      results.push({ sent: sent.map(m => ({ partition: m.partition, baseOffset: m.baseOffset })) })
    } catch (error) {
      results.push({ error: describeError(error) })
      if (txn.isActive()) await txn.abort().catch(() => {})
    }
  }
} catch (error) {
  results.push({ error: describeError(error) })
} finally {
  await producer.disconnect()
}
answer({ results })
