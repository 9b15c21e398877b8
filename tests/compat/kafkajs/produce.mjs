// Produce the request's messages with one KafkaJS producer: compression,
// acks, idempotence as asked; answers the RecordMetadata of each send.
// Request: { connection, topic, messages, compression, acks, idempotent, batchSize }
import { answer, client, compressionTypes, describeError, outgoing, readRequest } from './lib.mjs'

const request = readRequest()
const producer = client(request.connection).producer({
  idempotent: Boolean(request.idempotent),
  maxInFlightRequests: request.idempotent ? 1 : undefined,
  allowAutoTopicCreation: request.allowAutoTopicCreation ?? true,
})
const batchSize = request.batchSize ?? 100
const result = { sent: [] }
try {
  await producer.connect()
  for (let start = 0; start < request.messages.length; start += batchSize) {
    const metadata = await producer.send({
      topic: request.topic,
      acks: request.acks ?? -1,
      compression: compressionTypes[request.compression ?? 'none'],
      messages: request.messages.slice(start, start + batchSize).map(outgoing),
    })
    result.sent.push(...metadata.map(m => ({ partition: m.partition, errorCode: m.errorCode, baseOffset: m.baseOffset })))
  }
  // KafkaJS drops, without an error, messages for a partition its metadata
  // does not know (one past the topic's count): say so.
  const acknowledged = new Set(result.sent.map(m => m.partition))
  const dropped = [...new Set(request.messages.map(m => m.partition))]
    .filter(p => p !== undefined && p !== null && !acknowledged.has(p))
  if (dropped.length) result.error = { name: 'Unacknowledged', message: `no answer for partitions ${dropped}` }
} catch (error) {
  result.error = describeError(error)
} finally {
  await producer.disconnect()
}
answer(result)
