// Read a topic with a KafkaJS consumer group until `count` messages came or
// `timeoutMs` passed; answers them in the order each partition delivered.
// Request: { connection, topic, groupId, count, timeoutMs, fromBeginning, readUncommitted, autoCommit }
import { answer, client, describeError, incoming, readRequest } from './lib.mjs'

const request = readRequest()
const consumer = client(request.connection).consumer({
  groupId: request.groupId,
  readUncommitted: Boolean(request.readUncommitted),
  sessionTimeout: 10000,
  heartbeatInterval: 500,
  maxWaitTimeInMs: 100,
  retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
})
const messages = []
const result = { messages }
try {
  await consumer.connect()
  await consumer.subscribe({ topics: [request.topic], fromBeginning: request.fromBeginning ?? true })
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, request.timeoutMs ?? 20000)
    consumer.on(consumer.events.CRASH, event => { clearTimeout(timer); reject(event.payload.error) })
    consumer.run({
      autoCommit: request.autoCommit ?? true,
      eachMessage: async ({ topic, partition, message }) => {
        messages.push(incoming(topic, partition, message))
        if (messages.length >= request.count) { clearTimeout(timer); resolve() }
      },
    }).catch(reject)
  })
} catch (error) {
  result.error = describeError(error)
} finally {
  await consumer.disconnect()
}
answer(result)
