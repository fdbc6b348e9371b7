import { z } from 'zod';
import { route, type Routes } from '../http/route';

export const WEB_ROUTES = {
  webChat: route('get', '/', 'The web chat (a page; its calls to the API take the token typed into it)', {
    security: [],
    responses: { '200': { description: 'HTML', content: { 'text/html': { schema: z.string() } } } },
  }),
  webChatScript: route('get', '/app.js', "The web chat's script (an ES module on @rudder/client)", {
    security: [],
    responses: { '200': { description: 'JavaScript', content: { 'text/javascript': { schema: z.string() } } } },
  }),
} satisfies Routes;
