#!/usr/bin/env node
// Lint Cypher statements with Neo4j's own parser and semantic analysis
// (@neo4j-cypher/language-support, lintCypherQuery).
//
// stdin:  a JSON object {name: cypherText, ...}
// stdout: a JSON object {name: [diagnostic, ...], ...} where a diagnostic is
//         {severity: "Error"|"Warning"|"Information"|"Hint", message,
//          offsets: {start, end}, range: {start: {line, character}, end: ...}}
// exit:   0 when every statement was linted (whatever the diagnostics say),
//         2 on bad input or when the analyser fails its own self-check.
//
// Options:
//   --cypher-version "CYPHER 5"|"CYPHER 25"  language to check against
//                                           (default "CYPHER 5": Neo4j 5)
//   --schema FILE   JSON {labels, relationshipTypes, propertyKeys}: the graph
//                   model. With it, a label, relationship type or property
//                   key read by a statement but missing from the model is an
//                   Error (the analyser only warns); without it they are not
//                   checked.
//
// What is checked, as Error: syntax; semantic analysis (undefined variables,
// type errors, constructs removed in Neo4j 5 such as exists(n.prop) and
// pattern expressions used as values, old index/constraint DDL); unknown
// functions and procedures (the registry is Neo4j's built-in functions and
// db./dbms./tx. procedures, as the package's own recorded schema lists them);
// more or fewer than one statement per text (the driver runs exactly one).
// Parameters ($x) are all declared, so they are never errors.
// Deprecations come back as Warning.

import { readFileSync } from 'node:fs';
import {
  lintCypherQuery,
  parseParameters,
  parseStatementsStrs,
  testData,
} from '@neo4j-cypher/language-support';

const SEVERITY = { 1: 'Error', 2: 'Warning', 3: 'Information', 4: 'Hint' };
const SCHEMA_WARNING = /is not present in the database/;
const BUILTIN_PROCEDURE = /^(db|dbms|tx)\./;

function fail(message) {
  process.stderr.write(`cypher-lint: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { cypherVersion: 'CYPHER 5', schemaFile: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--schema') opts.schemaFile = argv[++i];
    else if (arg === '--cypher-version') opts.cypherVersion = argv[++i];
    else fail(`unknown argument ${arg}`);
  }
  if (!['CYPHER 5', 'CYPHER 25'].includes(opts.cypherVersion))
    fail(`unsupported --cypher-version ${opts.cypherVersion}`);
  return opts;
}

function pick(registry, predicate) {
  return Object.fromEntries(
    Object.entries(registry ?? {}).filter(([, value]) => predicate(value)),
  );
}

function baseSchema(opts) {
  const recorded = testData.mockSchema;
  const functions = {};
  const procedures = {};
  for (const version of ['CYPHER 5', 'CYPHER 25']) {
    functions[version] = pick(recorded.functions[version], (f) => f.isBuiltIn);
    procedures[version] = pick(recorded.procedures[version], (p) =>
      BUILTIN_PROCEDURE.test(p.name),
    );
  }
  if (Object.keys(functions[opts.cypherVersion]).length < 50)
    fail('the built-in function registry is missing from the package');
  const schema = {
    defaultLanguage: opts.cypherVersion,
    functions,
    procedures,
    parameters: {},
  };
  if (opts.schemaFile) {
    let model;
    try {
      model = JSON.parse(readFileSync(opts.schemaFile, 'utf8'));
    } catch (e) {
      fail(`cannot read --schema ${opts.schemaFile}: ${e.message}`);
    }
    schema.labels = [...(model.labels ?? [])];
    schema.relationshipTypes = [...(model.relationshipTypes ?? [])];
    schema.propertyKeys = [...(model.propertyKeys ?? [])];
  }
  return schema;
}

function diagnostic(severity, message, start, end) {
  return {
    severity,
    message,
    offsets: { start, end },
    range: {
      start: { line: 0, character: start },
      end: { line: 0, character: end },
    },
  };
}

function lintOne(text, schema, strictSchema) {
  if (typeof text !== 'string')
    return [diagnostic('Error', 'statement text is not a string', 0, 0)];
  const statements = parseStatementsStrs(text);
  if (statements.length !== 1)
    return [
      diagnostic(
        'Error',
        `expected exactly one Cypher statement, found ${statements.length}`,
        0,
        text.length,
      ),
    ];
  const parameters = {};
  for (const name of parseParameters(text, false)) parameters[name] = null;
  const { diagnostics } = lintCypherQuery(
    text,
    { ...schema, parameters },
    { consoleCommandsEnabled: false },
  );
  return diagnostics.map((d) => {
    let severity = SEVERITY[d.severity] ?? String(d.severity);
    if (strictSchema && severity === 'Warning' && SCHEMA_WARNING.test(d.message))
      severity = 'Error';
    return {
      severity,
      message: d.message,
      offsets: d.offsets,
      range: d.range,
    };
  });
}

// The package swallows exceptions thrown by its semantic analysis and then
// reports nothing: make sure it is really working before trusting silence.
function selfCheck(schema) {
  const mustFail = {
    syntax: 'MATCH (n RETURN n',
    semantic: 'MATCH (n) RETURN m',
    removed: 'MATCH (n) WHERE exists(n.prop) RETURN n',
    function: 'RETURN no_such_function(1) AS x',
  };
  for (const [kind, text] of Object.entries(mustFail)) {
    const found = lintOne(text, schema, false).some((d) => d.severity === 'Error');
    if (!found) fail(`self-check failed: no ${kind} error reported for: ${text}`);
  }
  const ok = 'MATCH (n) WHERE n.uuid = $uuid RETURN count(n) AS c';
  const errors = lintOne(ok, schema, false).filter((d) => d.severity === 'Error');
  if (errors.length)
    fail(`self-check failed: valid query reported ${JSON.stringify(errors)}`);
}

const opts = parseArgs(process.argv.slice(2));
let input;
try {
  input = JSON.parse(readFileSync(0, 'utf8'));
} catch (e) {
  fail(`stdin is not JSON: ${e.message}`);
}
if (input === null || typeof input !== 'object' || Array.isArray(input))
  fail('stdin must be a JSON object {name: cypherText}');

const schema = baseSchema(opts);
selfCheck({ ...schema, labels: undefined, relationshipTypes: undefined, propertyKeys: undefined });
const strictSchema = Boolean(opts.schemaFile);
const result = {};
for (const [name, text] of Object.entries(input)) {
  result[name] = lintOne(text, schema, strictSchema);
}
process.stdout.write(JSON.stringify(result, null, 1) + '\n');
