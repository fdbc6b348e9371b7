import { Controller, Header } from '@nestjs/common';
import { Route } from '../routes';
import { docsPage } from './docs-page';
import { openApiDocument } from './document';

/** `GET /openapi.json` and `GET /docs`: the API's OpenAPI 3.1 document, generated from libs/contracts. Unauthenticated. */
@Controller()
export class OpenApiController {
  private page: string | undefined;

  @Route('openapi')
  document(): unknown {
    return openApiDocument();
  }

  @Route('docs')
  @Header('content-type', 'text/html; charset=utf-8')
  // The page loads nothing: no script, no style or font from elsewhere.
  @Header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
  docs(): string {
    return (this.page ??= docsPage(openApiDocument()));
  }
}
