/**
 * The SQL engine a store runs on. In a module of its own, below the store and its migrations, so that both
 * can name it without importing each other.
 */
export type Dialect = 'sqlite' | 'postgres';
