// Shared by the KafkaJS drivers of tests/compat/test_kafkajs.py: read the
// request (JSON on stdin), build a client, register the codec plugins, and
// answer with one JSON line on stdout. Bytes travel as base64, null as null.
// Every driver is bounded: `deadlineMs` in the request (default 60 s) ends the
// process with exit code 3 whatever the client is waiting on.
import fs from 'node:fs'
import { createRequire } from 'node:module'

import kafkajs from 'kafkajs'

const require = createRequire(import.meta.url)
const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = kafkajs

// Which codec plugins loaded, by KafkaJS's name of the codec. gzip is built
// in; the others come from plugins with native parts (lz4, zstd) that may
// fail to build on a machine.
export const codecs = { none: true, gzip: true }

async function registerCodecs () {
  try {
    const SnappyCodec = require('kafkajs-snappy')
    CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
    codecs.snappy = true
  } catch (error) { codecs.snappy = String(error) }
  try {
    const LZ4Codec = require('kafkajs-lz4')
    CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec
    codecs.lz4 = true
  } catch (error) { codecs.lz4 = String(error) }
  try {
    // The package registers itself on the kafkajs module it resolves, the
    // same instance as ours (one copy in node_modules). Its CommonJS build
    // lacks tslib's helpers (0.11.0), so it is imported as ES module.
    await import('@sensejs/kafkajs-zstd-support')
    codecs.zstd = Boolean(CompressionCodecs[CompressionTypes.ZSTD])
  } catch (error) { codecs.zstd = String(error) }
}
await registerCodecs()

export const compressionTypes = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
}

export function readRequest () {
  const text = fs.readFileSync(0, 'utf8')
  const request = text.trim() ? JSON.parse(text) : {}
  const deadline = setTimeout(() => {
    process.stderr.write(`deadline of ${request.deadlineMs ?? 60000} ms passed\n`)
    process.exit(3)
  }, request.deadlineMs ?? 60000)
  deadline.unref()
  return request
}

function stderrLogger () {
  return ({ namespace, label, log }) => {
    const { message, ...extra } = log
    process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
  }
}

// connection: { brokers, clientId, ssl: { ca } | undefined, sasl: { mechanism, username, password } | undefined,
//               logLevel: 'ERROR' | 'WARN' | 'INFO' | 'DEBUG' }
export function client (connection) {
  const config = {
    clientId: connection.clientId ?? 'kcore-kafkajs',
    brokers: connection.brokers,
    connectionTimeout: 5000,
    requestTimeout: 15000,
    logLevel: logLevel[connection.logLevel ?? 'ERROR'],
    logCreator: stderrLogger,
    retry: { retries: connection.retries ?? 5, initialRetryTime: 100, maxRetryTime: 2000 },
  }
  if (connection.ssl) config.ssl = { ca: [fs.readFileSync(connection.ssl.ca, 'utf8')] }
  if (connection.sasl) config.sasl = connection.sasl
  return new Kafka(config)
}

export const toBytes = text => (text === null || text === undefined ? null : Buffer.from(text, 'base64'))
export const fromBytes = buffer => (buffer === null || buffer === undefined ? null : buffer.toString('base64'))

// What a test compares on: KafkaJS's error class, Kafka's error name
// (`type`) and code where the broker answered one.
// Errors per partition (KafkaJSDeleteTopicRecordsError) come as `partitions`,
// a wrapped error (KafkaJSNumberOfRetriesExceeded) as `cause`, those of
// several topics (KafkaJSAggregateError of createTopics) as `errors`.
export function describeError (error) {
  const described = {
    name: error.name,
    type: error.type ?? null,
    code: error.code ?? null,
    message: error.message,
    retriable: error.retriable ?? null,
  }
  if (error.cause) described.cause = describeError(error.cause)
  if (Array.isArray(error.errors)) described.errors = error.errors.map(describeError)
  if (Array.isArray(error.partitions)) {
    described.partitions = error.partitions.map(({ partition, offset, error: cause }) => ({
      partition, offset, type: cause?.type ?? null, name: cause?.name ?? null,
    }))
  }
  return described
}

export function answer (result) {
  process.stdout.write(JSON.stringify(result) + '\n')
}

// A message as the tests send it ({partition, key, value, headers: [[name, b64]], timestamp}) in KafkaJS's shape.
export function outgoing (message) {
  const headers = {}
  for (const [name, value] of message.headers ?? []) headers[name] = toBytes(value)
  const result = { key: toBytes(message.key), value: toBytes(message.value), headers }
  if (message.partition !== undefined && message.partition !== null) result.partition = message.partition
  if (message.timestamp !== undefined && message.timestamp !== null) result.timestamp = String(message.timestamp)
  return result
}

// A consumed KafkaJS message in the tests' shape, with its offset.
export function incoming (topic, partition, message) {
  const headers = []
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    for (const one of Array.isArray(value) ? value : [value]) headers.push([name, fromBytes(one)])
  }
  return {
    topic,
    partition,
    offset: Number(message.offset),
    key: fromBytes(message.key),
    value: fromBytes(message.value),
    headers,
    timestamp: Number(message.timestamp),
  }
}
