import { Command } from 'commander';

export function openapiCommand(): Command {
  return new Command('openapi')
    .description('print the OpenAPI 3.1 document of the API (JSON)')
    .action(async () => {
      // Loaded here, not at the top: it builds the whole app, which no other command needs.
      const { buildOpenApiDocument } = await import('../openapi-document.js');
      process.stdout.write(await buildOpenApiDocument());
    });
}
