/** Every endpoint of the API, registered in one place so a reader can find every path here. */
import type { App } from '../../app-types.js';
import type { RouteDeps } from './route-deps.js';
import { registerCatalogueRoutes } from './catalogue.routes.js';
import { registerCollectionRoutes } from './collection.routes.js';
import { registerMarketplaceRoutes } from './marketplace.routes.js';
import { registerMeRoute } from './me.route.js';
import { registerPriceRoutes } from './prices.routes.js';

export function registerRoutes(app: App, deps: RouteDeps): void {
  registerMeRoute(app, deps);
  registerCatalogueRoutes(app, deps);
  registerPriceRoutes(app, deps);
  registerCollectionRoutes(app, deps);
  registerMarketplaceRoutes(app, deps);
}
