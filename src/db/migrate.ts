import { loadConfig, ConfigError } from '../config';
import { openDatabase } from './orm';

/** `npm run migrate`: brings the database schema up to date (run before the api and workers start). */
openDatabase(loadConfig(), { migrate: true })
  .then((db) => db.close())
  .catch((err) => {
    console.error(err instanceof ConfigError ? err.message : err);
    process.exit(1);
  });
