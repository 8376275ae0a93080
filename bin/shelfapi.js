#!/usr/bin/env node
// The operator command line. The program itself lives in src/cli; this file only starts the built copy.
import { main } from '../dist/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
