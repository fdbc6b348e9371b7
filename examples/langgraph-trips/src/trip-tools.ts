import { tool } from 'langchain';
import { z } from 'zod';

export type Hotel = { id: string; name: string; city: string; pricePerNight: number };

const catalogue: Hotel[] = [
  { id: 'lis-1', name: 'Casa do Rio', city: 'Lisbon', pricePerNight: 120 },
  { id: 'lis-2', name: 'Alfama Rooms', city: 'Lisbon', pricePerNight: 85 },
  { id: 'por-1', name: 'Ribeira Inn', city: 'Porto', pricePerNight: 95 },
];

/**
 * The hotels of a city: HOTELS_URL, when set, is asked (GET ?city=…, a JSON array of hotels),
 * with the run's abort signal: the example's test holds that request open to steer during the call.
 */
export async function searchHotels(city: string, signal?: AbortSignal): Promise<string> {
  const url = process.env.HOTELS_URL;
  const hotels = url
    ? ((await (await fetch(`${url}?city=${encodeURIComponent(city)}`, { signal })).json()) as Hotel[])
    : catalogue.filter((h) => h.city.toLowerCase() === city.toLowerCase());
  return hotels.map((h) => `${h.id}: ${h.name}, ${h.pricePerNight} EUR a night`).join('\n') || `no hotels in ${city}`;
}

/** The team's tools, as LangChain's users write them: `tool(fn, { name, description, schema })`. */
export const searchHotelsTool = tool(async ({ city }, config) => searchHotels(city, config.signal), {
  name: 'search_hotels',
  description: 'Searches the hotels of a city, with their nightly rates.',
  schema: z.object({ city: z.string().describe('The city, e.g. Lisbon') }),
});

const bookings = new Map<string, string>();

/** Books a hotel; keyed by the call that books it, so the same call run again books nothing more. Its calls wait for a person (interruptOn). */
export const bookHotelTool = tool(
  async ({ hotelId }, config) => {
    const hotel = catalogue.find((h) => h.id === hotelId);
    if (!hotel) throw new Error(`there is no hotel ${hotelId}`);
    const key = config.toolCall?.id ?? hotelId;
    if (!bookings.has(key)) bookings.set(key, `B-${bookings.size + 1}`);
    return `booked ${hotel.name} (${bookings.get(key)}) by worker ${process.pid}`;
  },
  {
    name: 'book_hotel',
    description: 'Books a hotel by its id.',
    schema: z.object({ hotelId: z.string() }),
  },
);
