import type { FastifyInstance } from 'fastify';
import { frameOf, show, type DashboardDeps } from './context.js';

export function registerOverview(app: FastifyInstance, deps: DashboardDeps): void {
  void deps;
  app.get('/', async (request, reply) => show(request, reply, 'overview', frameOf(request, 'Overview', 'overview'), {}));
}
