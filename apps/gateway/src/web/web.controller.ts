import { Controller, Header, Inject } from '@nestjs/common';
import { Route } from '../http/route';
import { Authenticator } from '../auth/authenticator';
import { webAppScript, webPage } from './web-app';
import { WEB_ROUTES } from './web.routes';

/** Its script and its API calls from this origin only; nothing from anywhere else. */
const CSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

/**
 * `GET /`: the web chat, a page of this gateway's own (`GET /app.js` its script, on
 * @rudder/client). Unauthenticated, like /docs: the page holds nothing; its calls to the API
 * carry the token typed into it when AUTH_TOKENS (or a JWT setting) is configured.
 */
@Controller()
export class WebController {
  constructor(@Inject(Authenticator) private readonly authenticator: Authenticator) {}

  @Route(WEB_ROUTES.webChat)
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('content-security-policy', CSP)
  page(): string {
    return webPage(!this.authenticator.open);
  }

  @Route(WEB_ROUTES.webChatScript)
  @Header('content-type', 'text/javascript; charset=utf-8')
  @Header('content-security-policy', CSP)
  script(): Promise<string> {
    return webAppScript();
  }
}
