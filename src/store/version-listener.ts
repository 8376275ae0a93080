/**
 * A server's LISTEN connection (PostgreSQL + Redis): migration 0014's notifications of every change of an
 * account's access version or of the data version, whoever made it (psql included), on a connection of its
 * own. An account's new version is written to the meter's Redis (never lower), where the admission script
 * compares it with the principal a server holds; the data version is kept here, and requests answered from
 * held principals take it from here instead of reading PostgreSQL (so an import or a `load` is seen within
 * a second on servers that hold their principals).
 *
 * The server may use held principals only while this is `trusted()`: the connection listens, answers its
 * heartbeat (a silent network or a stopped PostgreSQL is noticed within HEARTBEAT_TIMEOUT_MS), every version
 * it was told of has reached Redis, and it knows the data version. Otherwise every request reads PostgreSQL,
 * as a server without Redis does. Notifications sent while it was not listening are lost, so when it listens
 * again it reads the data version anew and calls `onListening`, which drops every held principal: each is
 * read again from PostgreSQL, and a version Redis lacks is written by that request's admission.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { VERSIONS_CHANNEL } from './migrations/0014-version-notify.js';

/** A heartbeat is sent this often on the LISTEN connection... */
const HEARTBEAT_EVERY_MS = 250;
/** ...and a connection whose heartbeat is not answered within this long is taken for lost. */
export const HEARTBEAT_TIMEOUT_MS = 750;
const RECONNECT_DELAY_MS = 250;
const WRITE_RETRY_MS = 100;
/** Named in pg_stat_activity, so that an operator (or a test) can tell the LISTEN connection apart. */
export const LISTENER_APPLICATION_NAME = 'shelfapi-versions';

export interface VersionListenerOptions {
  databaseUrl: string;
  /** Writes an account's version (never lower; 'deleted' for an account that is gone) to the meter's Redis. */
  writeAccessVersion(accountId: number, version: number | 'deleted'): Promise<void>;
  /**
   * Called each time the connection listens (again): whatever was held before may have missed a change. And
   * on a TRUNCATE of api_keys or accounts (migration 0018's `x <schema>`), which no account's version names.
   */
  onListening(): void;
  /** For the server's log: the connection was lost, or listens again. */
  onEvent?(event: 'lost' | 'listening', error?: unknown): void;
}

/** What /metrics shows of the connection (observability/version-listener-metrics.ts). */
export interface VersionListenerStatus {
  /** The connection listens now. */
  listening: boolean;
  /** Times it listened again after it had listened and was lost (the first LISTEN is not counted). */
  reconnects: number;
  /** When PostgreSQL was last heard on it (a heartbeat answered, a notification, the LISTEN itself); epoch ms, null before. */
  lastHeardAt: number | null;
}

export class VersionListener {
  #client: pg.Client | null = null;
  #listening = false;
  #closed = false;
  #schema: string | null = null;
  #dataVersion: number | null = null;
  #pendingWrites = 0;
  #heartbeat: NodeJS.Timeout | null = null;
  #heartbeatSentAt: number | null = null;
  #connecting: Promise<void> | null = null;
  #listenedBefore = false;
  #reconnects = 0;
  #lastHeardAt: number | null = null;

  constructor(private readonly options: VersionListenerOptions) {}

  /** Connects in the background; until it listens, `trusted()` is false. */
  start(): void {
    if (this.#connecting !== null) return;
    this.#connecting = this.#connect().finally(() => {
      this.#connecting = null;
    });
  }

  /** Resolves once the connection listens (tests, and a server that wants to start warm). */
  async listening(timeoutMs = 5000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!this.trusted()) {
      if (Date.now() > until) throw new Error('the LISTEN connection did not come up');
      await sleep(20);
    }
  }

  /** Whether a server may use the principals it holds and the data version kept here. */
  trusted(): boolean {
    return this.#listening && this.#pendingWrites === 0 && this.#dataVersion !== null;
  }

  status(): VersionListenerStatus {
    return { listening: this.#listening, reconnects: this.#reconnects, lastHeardAt: this.#lastHeardAt };
  }

  /** The data version as the last notification (or the read when listening began) said; null when unknown. */
  get dataVersion(): number | null {
    return this.#dataVersion;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#stopHeartbeat();
    this.#listening = false;
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    while (!this.#closed) {
      const client = new pg.Client({
        connectionString: this.options.databaseUrl,
        application_name: LISTENER_APPLICATION_NAME,
        connectionTimeoutMillis: 2000,
        keepAlive: true,
      });
      client.on('error', (error) => this.#lost(client, error));
      client.on('end', () => this.#lost(client));
      client.on('notification', (message) => this.#notified(message));
      try {
        await client.connect();
        this.#schema = String((await client.query<{ schema: string }>('select current_schema() as schema')).rows[0]?.schema);
        this.#client = client;
        await client.query(`listen ${VERSIONS_CHANNEL}`);
        // Read after LISTEN: a change committed from here on is notified.
        const row = (await client.query<{ version: string | number }>('select version from data_version where id = 1')).rows[0];
        if (this.#closed || this.#client !== client) {
          await client.end().catch(() => undefined);
          return;
        }
        this.#dataVersion = row === undefined ? null : Number(row.version);
        this.options.onListening();
        this.#listening = true;
        this.#lastHeardAt = Date.now();
        if (this.#listenedBefore) this.#reconnects++;
        this.#listenedBefore = true;
        this.#startHeartbeat(client);
        this.options.onEvent?.('listening');
        return;
      } catch (error) {
        if (this.#client === client) this.#client = null;
        this.options.onEvent?.('lost', error);
        await client.end().catch(() => undefined);
        await sleep(RECONNECT_DELAY_MS);
      }
    }
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (this.#client !== client) return;
    this.#client = null;
    this.#listening = false;
    this.#stopHeartbeat();
    this.options.onEvent?.('lost', error);
    void client.end().catch(() => undefined);
    if (!this.#closed) {
      void sleep(RECONNECT_DELAY_MS).then(() => {
        if (!this.#closed) this.start();
      });
    }
  }

  #startHeartbeat(client: pg.Client): void {
    this.#stopHeartbeat();
    this.#heartbeat = setInterval(() => {
      const sentAt = this.#heartbeatSentAt;
      if (sentAt !== null) {
        if (Date.now() - sentAt > HEARTBEAT_TIMEOUT_MS) this.#lost(client, new Error('the LISTEN connection did not answer its heartbeat'));
        return;
      }
      this.#heartbeatSentAt = Date.now();
      client.query('select 1').then(
        () => {
          if (this.#client !== client) return;
          this.#heartbeatSentAt = null;
          this.#lastHeardAt = Date.now();
        },
        (error: unknown) => this.#lost(client, error),
      );
    }, HEARTBEAT_EVERY_MS);
    this.#heartbeat.unref();
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat !== null) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
    this.#heartbeatSentAt = null;
  }

  #notified(message: pg.Notification): void {
    this.#lastHeardAt = Date.now();
    if (message.channel !== VERSIONS_CHANNEL || message.payload === undefined) return;
    const [kind, schema, first, second] = message.payload.split(' ');
    if (schema !== this.#schema) return;
    if (kind === 'x') {
      // A TRUNCATE of api_keys or accounts (migration 0018): the accounts that went cannot be named.
      this.options.onListening();
      return;
    }
    if (kind === 'd') {
      // Notifications come in commit order: the last one is the data version as committed.
      this.#dataVersion = first === 'none' || first === undefined ? null : Number(first);
      return;
    }
    if (kind !== 'a' || first === undefined || second === undefined) return;
    const accountId = Number(first);
    const version = second === 'deleted' ? 'deleted' : Number(second);
    if (!Number.isSafeInteger(accountId) || (version !== 'deleted' && !Number.isSafeInteger(version))) return;
    void this.#write(accountId, version);
  }

  /** Until the version is in Redis this server uses no held principal; tried until Redis takes it. */
  async #write(accountId: number, version: number | 'deleted'): Promise<void> {
    this.#pendingWrites++;
    try {
      for (;;) {
        try {
          await this.options.writeAccessVersion(accountId, version);
          return;
        } catch {
          if (this.#closed) return;
          await sleep(WRITE_RETRY_MS, undefined, { ref: false });
        }
      }
    } finally {
      this.#pendingWrites--;
    }
  }
}
