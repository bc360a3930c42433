import type { FastifyInstance } from 'fastify';
import { frameOf, show, type DashboardDeps } from './context.js';

export function registerUsage(app: FastifyInstance, deps: DashboardDeps): void {
  void deps;
  app.get('/usage', async (request, reply) => show(request, reply, 'usage', frameOf(request, 'Usage', 'usage'), {}));
}
