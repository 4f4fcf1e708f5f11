/**
 * `npm start`: the whole embedded stack and the service, as child processes this script owns
 * (devnet/stack.ts): the Temporal dev server (SQLite in .data/), the devnet chains and doubles, one
 * worker, one API, the top-up gateway and the codec server.
 */
import { runStack } from './stack';

runStack({ command: 'npm start', dataDir: '.data' });
