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
} catch (error) {
  result.error = describeError(error)
} finally {
  await producer.disconnect()
}
answer(result)
