export type Hotel = { id: string; name: string; city: string; pricePerNight: number };
export type Booking = { reference: string; hotelId: string };

/**
 * The team's own hotel service, which its tools call. HOTELS_URL, when set, is the service it
 * asks: `GET ?city=…` answers the city's hotels (the example's test holds that request open, to
 * steer during the call), `POST /bookings` books `{hotelId, reference}`. A booking's reference
 * is the tool call's id, so a call run again after a crash books nothing twice.
 */
export class Hotels {
  private readonly bookings = new Map<string, Booking>();
  private readonly catalogue: Hotel[] = [
    { id: 'lis-1', name: 'Casa do Rio', city: 'Lisbon', pricePerNight: 120 },
    { id: 'lis-2', name: 'Alfama Rooms', city: 'Lisbon', pricePerNight: 85 },
    { id: 'por-1', name: 'Ribeira Inn', city: 'Porto', pricePerNight: 95 },
  ];

  async search(city: string, signal?: AbortSignal): Promise<Hotel[]> {
    const url = process.env.HOTELS_URL;
    if (url) return (await fetch(`${url}?city=${encodeURIComponent(city)}`, { signal })).json() as Promise<Hotel[]>;
    return this.catalogue.filter((h) => h.city.toLowerCase() === city.toLowerCase());
  }

  async book(hotelId: string, reference: string, signal?: AbortSignal): Promise<Booking> {
    const url = process.env.HOTELS_URL;
    if (url) {
      const response = await fetch(`${url}/bookings`, { method: 'POST', body: JSON.stringify({ hotelId, reference }), headers: { 'content-type': 'application/json' }, signal });
      return response.json() as Promise<Booking>;
    }
    const booking = this.bookings.get(reference) ?? { reference, hotelId };
    this.bookings.set(reference, booking);
    return booking;
  }
}
