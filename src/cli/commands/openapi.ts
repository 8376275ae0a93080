import { Command } from 'commander';
import { buildOpenApiDocument } from '../openapi-document.js';

export function openapiCommand(): Command {
  return new Command('openapi')
    .description('print the OpenAPI 3.1 document of the API (JSON)')
    .action(async () => {
      process.stdout.write(await buildOpenApiDocument());
    });
}
