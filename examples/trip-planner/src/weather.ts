/** Made-up forecasts, the same for a city every time: what the weather MCP server (weather-server.ts) answers. */
const SKIES = ['sunny', 'partly cloudy', 'cloudy', 'light rain', 'windy'];

/** The made-up forecast of `city` for its next `days` days. */
export function forecast(city: string, days: number): string[] {
  let seed = [...city.toLowerCase()].reduce((sum, c) => (sum * 31 + c.charCodeAt(0)) % 10_007, 7);
  return Array.from({ length: days }, (_, day) => {
    seed = (seed * 48_271) % 2_147_483_647;
    return `day ${day + 1}: ${SKIES[seed % SKIES.length]}, ${12 + (seed % 17)} °C`;
  });
}
