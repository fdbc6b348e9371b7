/**
 * A small MCP server over stdio, as a team may already have one: `forecast {city, days}`. The
 * trip planner takes its tool through `mcp` (trip-planner.module.ts); each worker starts it.
 * Its forecasts are made up (the same for a city every time): it stands for a real service.
 * `extra._meta['rudder/callId']` is the Rudder call id, the same on every run of a call: a
 * tool with a side effect would key it by that id.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { forecast } from './weather';

const server = new McpServer({ name: 'weather', version: '1.0.0' });
server.registerTool(
  'forecast',
  {
    description: 'The weather forecast of a city for the next days.',
    inputSchema: { city: z.string().min(1).describe('The city'), days: z.number().int().min(1).max(7).default(3).describe('How many days, 1 to 7') },
  },
  async ({ city, days }) => ({ content: [{ type: 'text', text: `${city}:\n${forecast(city, days).join('\n')}` }] }),
);
await server.connect(new StdioServerTransport());
