import { createOpenAI } from '@ai-sdk/openai';
import { stepCountIs, tool, ToolLoopAgent } from 'ai';
import { z } from 'zod';

/**
 * The team's agent, as AI SDK users write one: a `ToolLoopAgent` with its model and tools. Nothing
 * in it knows Rudder; trips.module.ts registers it (`aiSdkAgent`).
 *
 * Its hotels come from HOTELS_URL when set (`GET ?city=…` answers a JSON array, `POST /bookings`
 * books): the example's test holds a search open there to steer during the call, and counts what
 * ran. Without it, from a small catalogue.
 */
const catalogue = [
  { id: 'lis-1', name: 'Casa do Rio', city: 'Lisbon', pricePerNight: 120 },
  { id: 'lis-2', name: 'Alfama Rooms', city: 'Lisbon', pricePerNight: 85 },
  { id: 'por-1', name: 'Ribeira Inn', city: 'Porto', pricePerNight: 95 },
];

const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });

export const tripsAgent = new ToolLoopAgent({
  model: openai.chat(process.env.OPENAI_MODEL ?? 'gpt-4o-mini'),
  instructions: 'You plan trips. Search hotels before you suggest one; book only when asked. The traveller may add to their request while you work: follow their latest words.',
  tools: {
    search_hotels: tool({
      description: 'Searches the hotels of a city, with their price a night in EUR.',
      inputSchema: z.object({ city: z.string().describe('The city, e.g. Lisbon') }),
      execute: async ({ city }, { abortSignal }) => {
        const url = process.env.HOTELS_URL;
        if (!url) return catalogue.filter((h) => h.city.toLowerCase() === city.toLowerCase());
        const response = await fetch(`${url}?city=${encodeURIComponent(city)}`, { signal: abortSignal });
        return response.json();
      },
    }),
    book_hotel: tool({
      description: 'Books a hotel for a number of nights.',
      inputSchema: z.object({ hotelId: z.string(), nights: z.number().int().min(1).max(30) }),
      needsApproval: true,
      execute: async ({ hotelId, nights }, { abortSignal }) => {
        const url = process.env.HOTELS_URL;
        if (!url) return `booked ${hotelId} for ${nights} nights`;
        const response = await fetch(`${url}/bookings`, { method: 'POST', body: JSON.stringify({ hotelId, nights }), signal: abortSignal });
        return response.text();
      },
    }),
  },
  stopWhen: stepCountIs(12),
});
