// Runs KafkaJS admin calls in order and answers each one's result or error,
// so one process (one connection) covers a whole scenario.
// Request: { connection, steps: [{ op: 'createTopics' | 'describeAcls' | ..., args: [...] }] }
// ACL and config enums travel by name ('TOPIC', 'READ', 'ALLOW', 'LITERAL'),
// ACL answers' enums too; KafkaJS speaks numbers.
import kafkajs from 'kafkajs'

import { answer, client, describeError, readRequest } from './lib.mjs'

const { AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes, ConfigResourceTypes } = kafkajs
const ENUMS = {
  resourceType: AclResourceTypes,
  operation: AclOperationTypes,
  permissionType: AclPermissionTypes,
  resourcePatternType: ResourcePatternTypes,
  type: ConfigResourceTypes,
}
const NAMES = Object.fromEntries(Object.entries(ENUMS).map(
  ([field, values]) => [field, Object.fromEntries(Object.entries(values).map(([name, value]) => [value, name]))]))

function convert (value, table) {
  if (Array.isArray(value)) return value.map(item => convert(item, table))
  if (value === null || typeof value !== 'object') return value
  const result = {}
  for (const [field, item] of Object.entries(value)) {
    const names = table[field]
    result[field] = names && (typeof item === 'string' || typeof item === 'number') && item in names
      ? names[item]
      : convert(item, table)
  }
  return result
}

const request = readRequest()
const admin = client(request.connection).admin()
const results = []
try {
  await admin.connect()
  for (const step of request.steps) {
    try {
      const result = await admin[step.op](...convert(step.args ?? [], ENUMS))
      // Only ACL answers carry enums by these field names (a config
      // answer's resourceType is a ConfigResourceTypes number).
      results.push({ result: step.op.endsWith('Acls') ? convert(result ?? null, NAMES) : result ?? null })
    } catch (error) {
      results.push({ error: describeError(error) })
    }
  }
} catch (error) {
  results.push({ error: describeError(error) })
} finally {
  await admin.disconnect()
}
answer({ results })
