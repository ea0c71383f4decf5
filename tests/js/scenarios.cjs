'use strict';
// Scenarios of the official JavaScript SDK (`@azure/data-tables`) against a Table endpoint.
//
// Usage: node scenarios.cjs <scenario>   (the SDK resolved through NODE_PATH)
//        node scenarios.cjs --list       (the scenario names, one per line)
// Environment: SCENARIO_CONNECTION_STRING (AccountName, AccountKey, TableEndpoint) and
// SCENARIO_STRICT=1 where the endpoint follows the service's rules (table-server); without it the
// scenarios accept Azurite's documented deviations (protocol doc, section 10), and only those.
// With SCENARIO_BEARER_TOKEN (and SCENARIO_EXPIRED_BEARER_TOKEN, which must be refused) the
// clients authenticate with that token instead of the account key (no AccountKey needed); an
// HTTPS endpoint's CA is trusted through NODE_EXTRA_CA_CERTS, which the harness sets.
// Each scenario creates its own tables, checks every answer with `assert`, and exits non-zero
// with the failed expectation on stderr; it prints `ok <scenario>` when every check passed.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const {
  AzureNamedKeyCredential,
  AzureSASCredential,
  TableClient,
  TableServiceClient,
  generateAccountSas,
  generateTableSas,
  odata,
} = require('@azure/data-tables');

const STRICT = process.env.SCENARIO_STRICT === '1';
// Loopback endpoints may be plain HTTP; a failed request must fail the scenario, not be retried.
const OPTIONS = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
// Set by `main` before a scenario runs.
let settings, credential, service;

function parseConnectionString(text) {
  const settings = {};
  for (const part of text.split(';')) {
    const at = part.indexOf('=');
    if (at > 0) settings[part.slice(0, at)] = part.slice(at + 1);
  }
  const needed = process.env.SCENARIO_BEARER_TOKEN ? ['AccountName', 'TableEndpoint'] : ['AccountName', 'AccountKey', 'TableEndpoint'];
  for (const key of needed) {
    if (!settings[key]) throw new Error(`SCENARIO_CONNECTION_STRING lacks ${key}`);
  }
  return settings;
}

/** A table name no other scenario or run uses. */
function uniqueName(prefix) {
  return `${prefix}${crypto.randomBytes(6).toString('hex')}`;
}

async function freshTable(prefix) {
  const name = uniqueName(prefix);
  await service.createTable(name);
  return new TableClient(settings.TableEndpoint, name, credential, OPTIONS);
}

/**
 * The service's error code of a failed request. The SDK sets `code` for some operations only;
 * otherwise it is in the `x-ms-error-code` header, the `odata.error` body it keeps, or an XML
 * body (`<m:code>` of the OData error, `<Code>` of Azurite's), which the SDK leaves unread.
 */
function errorCode(error) {
  const xml = /<(?:m:)?[Cc]ode>([^<]*)</.exec(error.response?.bodyAsText ?? '');
  return error.code ?? error.details?.errorCode ?? error.details?.odataError?.code ?? xml?.[1];
}

/** Runs `action`, which must fail with `status` and one of `codes`; returns the error. */
async function rejects(action, status, codes) {
  try {
    await action();
  } catch (error) {
    assert.equal(error.statusCode, status, `status of ${error.message}`);
    const code = errorCode(error);
    if (codes) assert.ok(codes.includes(code), `code ${code}, expected one of ${codes}: ${error.message}`);
    return error;
  }
  assert.fail(`expected a ${status} ${codes || ''} error, the request succeeded`);
}

/** A token credential that returns `token`, as minted by the harness, said to live an hour. */
function staticTokenCredential(token) {
  return {
    async getToken() {
      return { token, expiresOnTimestamp: Date.now() + 3600 * 1000 };
    },
  };
}

async function collect(iterable) {
  const items = [];
  for await (const item of iterable) items.push(item);
  return items;
}

const scenarios = {
  // Every EDM type, extremes included, written through the SDK and read back raw (the
  // service's strings and annotations) and converted.
  async edm_types() {
    const table = await freshTable('jsedm');
    const when = '2024-02-29T23:59:59.1234567Z';
    const guid = '0f8fad5b-d9cb-469f-a165-70867728950e';
    await table.createEntity({
      partitionKey: 'p',
      rowKey: 'r',
      Str: 'h\u00e9llo \u{1F600} "quoted" \\ /',
      Empty: '',
      I32: 2147483647,
      I32Min: -2147483648,
      I64: { value: '9223372036854775807', type: 'Int64' },
      I64Min: { value: '-9223372036854775808', type: 'Int64' },
      Dbl: 1.5,
      DblWhole: { value: 2, type: 'Double' },
      Tiny: 5e-324,
      Huge: 1.7976931348623157e308,
      Nan: { value: 'NaN', type: 'Double' },
      Inf: { value: 'Infinity', type: 'Double' },
      NegInf: { value: '-Infinity', type: 'Double' },
      Yes: true,
      No: false,
      When: { value: when, type: 'DateTime' },
      Id: { value: guid, type: 'Guid' },
      Bin: new Uint8Array([0, 1, 254, 255]),
      EmptyBin: new Uint8Array([]),
    });
    const raw = await table.getEntity('p', 'r', { disableTypeConversion: true });
    const typed = (value, type) => ({ value, type });
    assert.deepEqual(raw.Str, typed('h\u00e9llo \u{1F600} "quoted" \\ /', 'String'));
    assert.deepEqual(raw.Empty, typed('', 'String'));
    assert.deepEqual(raw.I32, typed('2147483647', 'Int32'));
    assert.deepEqual(raw.I32Min, typed('-2147483648', 'Int32'));
    assert.deepEqual(raw.I64, typed('9223372036854775807', 'Int64'));
    assert.deepEqual(raw.I64Min, typed('-9223372036854775808', 'Int64'));
    assert.deepEqual(raw.When, typed(when, 'DateTime'));
    assert.deepEqual(raw.Id, typed(guid, 'Guid'));
    assert.deepEqual(raw.Bin, typed('AAH+/w==', 'Binary'));
    assert.deepEqual(raw.EmptyBin, typed('', 'Binary'));
    assert.deepEqual(raw.Yes, typed('true', 'Boolean'));
    assert.deepEqual(raw.No, typed('false', 'Boolean'));
    assert.equal(raw.Nan.value, 'NaN');
    assert.equal(raw.Inf.value, 'Infinity');
    assert.equal(raw.NegInf.value, '-Infinity');

    const converted = await table.getEntity('p', 'r');
    assert.equal(converted.I64, 9223372036854775807n);
    assert.equal(converted.I64Min, -9223372036854775808n);
    assert.equal(converted.Dbl, 1.5);
    assert.equal(converted.DblWhole, 2);
    assert.equal(converted.Tiny, 5e-324);
    assert.equal(converted.Huge, 1.7976931348623157e308);
    // The SDK hands the special doubles on as the service's strings.
    assert.deepEqual([converted.Nan, converted.Inf, converted.NegInf], ['NaN', 'Infinity', '-Infinity']);
    assert.equal(converted.When.toISOString(), '2024-02-29T23:59:59.123Z');
    assert.deepEqual(Array.from(converted.Bin), [0, 1, 254, 255]);
    assert.equal(converted.Yes, true);
    assert.ok(converted.etag.startsWith('W/"datetime\''), `etag ${converted.etag}`);
    assert.ok(converted.timestamp, 'Timestamp is returned');
  },

  // Entity-group transactions: all operations commit together, a failing one commits nothing
  // and names its index.
  async batches() {
    const table = await freshTable('jsbatch');
    await table.createEntity({ partitionKey: 'p', rowKey: 'kept', V: 1 });
    await table.createEntity({ partitionKey: 'p', rowKey: 'gone', V: 1 });
    await table.submitTransaction([
      ['create', { partitionKey: 'p', rowKey: 'a', V: 1 }],
      ['upsert', { partitionKey: 'p', rowKey: 'b', V: 2 }, 'Replace'],
      ['update', { partitionKey: 'p', rowKey: 'kept', W: 3 }, 'Merge'],
      ['delete', { partitionKey: 'p', rowKey: 'gone' }],
    ]);
    let rows = await collect(table.listEntities());
    assert.deepEqual(rows.map((r) => r.rowKey), ['a', 'b', 'kept']);
    const kept = rows.find((r) => r.rowKey === 'kept');
    assert.deepEqual([kept.V, kept.W], [1, 3], 'the merge kept V and added W');

    // The third operation fails: nothing of the batch is applied, the error names index 2.
    const error = await rejects(
      () =>
        table.submitTransaction([
          ['create', { partitionKey: 'p', rowKey: 'c', V: 1 }],
          ['update', { partitionKey: 'p', rowKey: 'a', V: 9 }, 'Replace'],
          ['create', { partitionKey: 'p', rowKey: 'b', V: 1 }],
        ]),
      409,
      ['EntityAlreadyExists'],
    );
    assert.match(error.message, /(^|")2:/m, `the failing index in ${error.message}`);
    rows = await collect(table.listEntities());
    assert.deepEqual(rows.map((r) => r.rowKey), ['a', 'b', 'kept'], 'the failed batch left no row');
    assert.equal(rows[0].V, 1, 'the failed batch left no change');

    // A missing row fails its update with 404 at its index.
    const missing = await rejects(
      () => table.submitTransaction([['update', { partitionKey: 'p', rowKey: 'none', V: 1 }, 'Merge']]),
      404,
      ['ResourceNotFound'],
    );
    assert.match(missing.message, /(^|")0:/m);
  },

  // Paging with small pages: every row once, in key order, resumable from a token.
  async paging() {
    const table = await freshTable('jspage');
    const keys = [];
    for (let p = 0; p < 3; p++) {
      const actions = [];
      for (let r = 0; r < 9; r++) {
        const rowKey = String(r).padStart(3, '0');
        keys.push(`p${p}/${rowKey}`);
        actions.push(['create', { partitionKey: `p${p}`, rowKey, N: p * 9 + r }]);
      }
      await table.submitTransaction(actions);
    }
    const pages = [];
    for await (const page of table.listEntities().byPage({ maxPageSize: 4 })) pages.push(page);
    const seen = pages.flatMap((page) => page.map((e) => `${e.partitionKey}/${e.rowKey}`));
    assert.deepEqual(seen, keys, 'every row once, in key order');
    assert.ok(pages.every((page) => page.length <= 4), 'no page above its size');
    assert.ok(pages.length >= 7, `${pages.length} pages of at most 4 rows`);

    // Resume from the second page's token: the rest, exactly.
    const first = table.listEntities().byPage({ maxPageSize: 4 });
    await first.next();
    const second = (await first.next()).value;
    const resumed = [];
    for await (const page of table.listEntities().byPage({ maxPageSize: 4, continuationToken: second.continuationToken })) {
      resumed.push(...page.map((e) => `${e.partitionKey}/${e.rowKey}`));
    }
    assert.deepEqual(resumed, keys.slice(8));

    // A filter and a projection, paged.
    const filtered = await collect(
      table.listEntities({ queryOptions: { filter: odata`N ge ${10} and PartitionKey ne ${'p2'}`, select: ['N'] } }),
    );
    assert.deepEqual(filtered.map((e) => e.N), [10, 11, 12, 13, 14, 15, 16, 17]);
    assert.ok(filtered.every((e) => Object.keys(e).filter((k) => k === 'V').length === 0));

    // A listed property an entity lacks: the service answers it as null, Azurite leaves it out.
    const [lacking, ...more] = await collect(
      table.listEntities({ queryOptions: { filter: odata`N eq ${10}`, select: ['N', 'Missing'] } }),
    );
    assert.equal(more.length, 0);
    assert.equal(lacking.N, 10);
    if (STRICT) {
      assert.ok('Missing' in lacking && lacking.Missing === null, JSON.stringify(lacking));
    } else {
      assert.ok(!('Missing' in lacking), JSON.stringify(lacking));
    }
  },

  // Replace, merge and the upserts, with and without ETags.
  async etags() {
    const table = await freshTable('jsetag');
    const created = await table.createEntity({ partitionKey: 'p', rowKey: 'r', A: 1, B: 'b' });
    await table.updateEntity({ partitionKey: 'p', rowKey: 'r', A: 2 }, 'Merge', { etag: created.etag });
    let row = await table.getEntity('p', 'r');
    assert.deepEqual([row.A, row.B], [2, 'b'], 'a merge keeps the other properties');

    // The creation's ETag is stale now.
    await rejects(
      () => table.updateEntity({ partitionKey: 'p', rowKey: 'r', A: 3 }, 'Replace', { etag: created.etag }),
      412,
      ['UpdateConditionNotSatisfied'],
    );
    await rejects(() => table.deleteEntity('p', 'r', { etag: created.etag }), 412, ['UpdateConditionNotSatisfied']);

    await table.updateEntity({ partitionKey: 'p', rowKey: 'r', A: 3 }, 'Replace', { etag: row.etag });
    row = await table.getEntity('p', 'r');
    assert.deepEqual([row.A, row.B], [3, undefined], 'a replace drops the other properties');

    await table.upsertEntity({ partitionKey: 'p', rowKey: 'r', C: true }, 'Merge');
    row = await table.getEntity('p', 'r');
    assert.deepEqual([row.A, row.C], [3, true]);
    await table.upsertEntity({ partitionKey: 'p', rowKey: 'new', D: 4 }, 'Replace');
    assert.equal((await table.getEntity('p', 'new')).D, 4, 'an upsert creates');

    await rejects(() => table.updateEntity({ partitionKey: 'p', rowKey: 'none', A: 1 }, 'Merge'), 404, ['ResourceNotFound']);
    await table.deleteEntity('p', 'r', { etag: '*' });
    await rejects(() => table.getEntity('p', 'r'), 404, ['ResourceNotFound']);
  },

  // Table SAS: permissions, expiry, and the PartitionKey/RowKey range it grants.
  async sas() {
    // Signing a SAS needs the account key.
    assert.ok(settings.AccountKey, 'the sas scenario needs the account key');
    const table = await freshTable('jssas');
    await table.createEntity({ partitionKey: 'a', rowKey: '1', V: 1 });
    await table.createEntity({ partitionKey: 'b', rowKey: '1', V: 2 });
    await table.createEntity({ partitionKey: 'b', rowKey: '5', V: 3 });
    const expiresOn = new Date(Date.now() + 3600 * 1000);
    const client = (sasOptions) => {
      const token = generateTableSas(table.tableName, credential, sasOptions);
      return new TableClient(settings.TableEndpoint, table.tableName, new AzureSASCredential(token), OPTIONS);
    };

    const reader = client({ permissions: { query: true }, expiresOn });
    assert.equal((await reader.getEntity('a', '1')).V, 1, 'a read SAS reads');
    await rejects(() => reader.createEntity({ partitionKey: 'c', rowKey: '1' }), 403, ['AuthorizationPermissionMismatch']);

    const expired = client({ permissions: { query: true }, expiresOn: new Date(Date.now() - 3600 * 1000) });
    await rejects(() => expired.getEntity('a', '1'), 403, STRICT ? ['AuthenticationFailed'] : ['AuthorizationFailure']);

    const forged = new TableClient(
      settings.TableEndpoint,
      table.tableName,
      new AzureSASCredential(generateTableSas(table.tableName, new AzureNamedKeyCredential(settings.AccountName, Buffer.from('not the key').toString('base64')), { permissions: { query: true }, expiresOn })),
      OPTIONS,
    );
    await rejects(() => forged.getEntity('a', '1'), 403, STRICT ? ['AuthenticationFailed'] : ['AuthorizationFailure']);

    // A range of partition b, rows 1 to 3: row b/1 only. Azurite ignores ranges (deviation 1).
    const ranged = client({
      permissions: { query: true, add: true },
      expiresOn,
      startPartitionKey: 'b',
      startRowKey: '1',
      endPartitionKey: 'b',
      endRowKey: '3',
    });
    assert.equal((await ranged.getEntity('b', '1')).V, 2, 'inside the range');
    if (STRICT) {
      await rejects(() => ranged.getEntity('a', '1'), 403);
      await rejects(() => ranged.getEntity('b', '5'), 403);
      await rejects(() => ranged.createEntity({ partitionKey: 'c', rowKey: '1' }), 403);
      const visible = await collect(ranged.listEntities());
      assert.deepEqual(visible.map((e) => `${e.partitionKey}/${e.rowKey}`), ['b/1'], 'a query sees the range only');
    }

    // An account SAS creates tables with the SDK's `write` permission (the service takes `c` or `w`).
    const accountSas = generateAccountSas(credential, { permissions: { write: true }, resourceTypes: 'c', expiresOn });
    const made = uniqueName('jsacctsas');
    await new TableServiceClient(settings.TableEndpoint, new AzureSASCredential(accountSas), OPTIONS).createTable(made);
    await new TableClient(settings.TableEndpoint, made, credential, OPTIONS).createEntity({ partitionKey: 'p', rowKey: 'r' });
  },

  // The service's error codes and statuses, as the SDK reports them.
  async errors() {
    const table = await freshTable('jserr');
    // (`createTable` of an existing table and `deleteTable` of a missing one are not checked
    // here: the SDK swallows their 409 and 404.)
    await rejects(() => table.getEntity('p', 'none'), 404, ['ResourceNotFound']);
    await table.createEntity({ partitionKey: 'p', rowKey: 'r' });
    await rejects(() => table.createEntity({ partitionKey: 'p', rowKey: 'r' }), 409, ['EntityAlreadyExists']);
    await rejects(
      () => table.createEntity({ partitionKey: 'p', rowKey: 'bad/key' }),
      400,
      STRICT ? ['OutOfRangeInput'] : ['InvalidInput'],
    );
    await rejects(() => table.createEntity({ partitionKey: 'p', rowKey: 'big', S: 'x'.repeat(32769) }), 400, ['PropertyValueTooLarge']);
    await rejects(() => table.listEntities({ queryOptions: { filter: 'N eq' } }).next(), 400, ['InvalidInput']);
    const gone = new TableClient(settings.TableEndpoint, uniqueName('jsnone'), credential, OPTIONS);
    await rejects(() => gone.createEntity({ partitionKey: 'p', rowKey: 'r' }), 404, ['TableNotFound']);
    // Get Table ACL asks for XML (`Accept: application/xml`), and the service answers its
    // errors in the form the request accepts: the OData XML error (`<m:error>`). Azurite answers
    // XML too, but its own `<Error><Code>` form (with deviation 2's `x-ms-error-code`).
    const acl = await rejects(() => gone.getAccessPolicy(), 404, ['TableNotFound']);
    const contentType = acl.response?.headers.get('content-type') ?? '';
    assert.equal(contentType.split(';')[0].trim(), 'application/xml', contentType);
    const body = acl.response?.bodyAsText ?? '';
    const form = STRICT ? '<m:code>TableNotFound</m:code>' : '<Code>TableNotFound</Code>';
    assert.ok(body.includes(form), body);
    if (process.env.SCENARIO_BEARER_TOKEN) {
      const expired = staticTokenCredential(process.env.SCENARIO_EXPIRED_BEARER_TOKEN || '');
      const refused = new TableClient(settings.TableEndpoint, table.tableName, expired, OPTIONS);
      await rejects(() => refused.getEntity('p', 'r'), 403, ['AuthenticationFailed']);
    }
  },

  // Listing tables: a filter on the name, paged by NextTableName.
  async tables() {
    const prefix = uniqueName('jslist');
    const names = [];
    for (let i = 0; i < 5; i++) {
      names.push(`${prefix}${i}`);
      await service.createTable(`${prefix}${i}`);
    }
    const filter = odata`TableName ge ${prefix} and TableName lt ${prefix + 'z'}`;
    const pages = [];
    for await (const page of service.listTables({ queryOptions: { filter } }).byPage({ maxPageSize: 2 })) pages.push(page);
    assert.deepEqual(pages.map((page) => page.length), [2, 2, 1]);
    assert.deepEqual(pages.flat().map((t) => t.name), names);
    await service.deleteTable(names[0]);
    const left = await collect(service.listTables({ queryOptions: { filter } }));
    assert.deepEqual(left.map((t) => t.name), names.slice(1));
  },
};

async function main() {
  const name = process.argv[2];
  if (name === '--list') {
    console.log(Object.keys(scenarios).join('\n'));
    return;
  }
  const scenario = scenarios[name];
  if (!scenario) {
    console.error(`unknown scenario ${name}; known: ${Object.keys(scenarios).join(', ')}`);
    process.exit(2);
  }
  settings = parseConnectionString(process.env.SCENARIO_CONNECTION_STRING || '');
  const token = process.env.SCENARIO_BEARER_TOKEN;
  credential = token ? staticTokenCredential(token) : new AzureNamedKeyCredential(settings.AccountName, settings.AccountKey);
  service = new TableServiceClient(settings.TableEndpoint, credential, OPTIONS);
  await scenario();
  console.log(`ok ${name}`);
}

main().catch((error) => {
  console.error(error && error.stack ? error.stack : error);
  process.exit(1);
});
