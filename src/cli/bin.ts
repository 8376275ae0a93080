/** Entry used by `node --import tsx src/cli/bin.ts` (tests run the source without a build). */
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
