// Run by native-objects-gc.test.ts: statements dropped right away (as Kysely's driver and db.pragma() do),
// then connections opened and closed (as exports and the search index builder do); prints "freed" at the end.
const Database = require('better-sqlite3');
const db = new Database(':memory:');
for (let i = 0; i < 50000; i++) db.prepare('select ' + (i % 100)).get();
for (let i = 0; i < 2000; i++) { const other = new Database(':memory:'); other.prepare('select 1').get(); other.close(); }
db.close();
process.stdout.write('freed');
