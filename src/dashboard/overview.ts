import type { FastifyInstance } from 'fastify';
import { overviewView } from '../admin/overview.js';
import { alertSettings, recentAlerts } from './alerts.js';
import { frameOf, show, type DashboardDeps } from './context.js';

/**
 * The overview (admin/overview.ts, as GET /admin/overview answers it): today and this month,
 * the provider budget and its burn rate, the breaker, the most recent budget alerts (alerts.ts),
 * the top teams and keys, and 30 days of credits spent and saved as a chart with its table.
 */
export function registerOverview(app: FastifyInstance, deps: DashboardDeps): void {
  app.get('/', async (request, reply) => {
    const [o, alerts] = await Promise.all([overviewView(deps, deps.clock.now()), recentAlerts(deps)]);
    const chart = {
      type: 'bar',
      labels: o.daily.map((d) => d.day.slice(5)),
      series: [
        { label: 'Credits spent', data: o.daily.map((d) => d.credits_spent) },
        { label: 'Credits saved by the cache', data: o.daily.map((d) => d.credits_saved) },
      ],
    };
    return show(request, reply, 'overview', frameOf(request, 'Overview', 'overview'), { o, chart, charts: true, alerts, settings: alertSettings(deps) });
  });
}
