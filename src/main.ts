// `npm start`: the docpipe server. With no DATABASE_URL it runs embedded (PGlite under
// DATA_DIR) and, on the first start, creates a development account and prints its key once.
import { loadConfig } from './config.js';
import { openDb } from './store/db.js';
import { startApp } from './server/app.js';
import { createLogger } from './log.js';
import { ensureDevAccount } from './cli/dev-account.js';

const config = loadConfig();
const log = createLogger(config.logLevel);
const db = await openDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, dataDir: config.dataDir });
if (db.embedded) {
  const dev = await ensureDevAccount(db.sql);
  if (dev) {
    process.stdout.write(`\nEmbedded mode: created account ${dev.accountId} (plan ${dev.plan}, ${dev.credits} credits).\n`
      + `API key (shown once, keep it): ${dev.key}\n\n`);
  }
}
const app = await startApp(config, { db, log });
log.info({ port: app.port, embedded: db.embedded }, `docpipe listening on http://${config.host}:${app.port}`);

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'shutting down');
  await app.close();
  await db.close();
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
