import { Controller, Header, Inject } from '@nestjs/common';
import { Route, ROUTE_TABLE, type Routes } from '../http/route';
import { docsPage } from './docs-page';
import { openApiDocument } from './openapi-document';
import { OPERATION_ROUTES } from './operations.routes';

/** `GET /openapi.json` and `GET /docs`: the API's OpenAPI 3.1 document, generated from libs/contracts. Unauthenticated. */
@Controller()
export class OpenApiController {
  private built: ReturnType<typeof openApiDocument> | undefined;
  private page: string | undefined;

  constructor(@Inject(ROUTE_TABLE) private readonly routes: Routes) {}

  @Route(OPERATION_ROUTES.openapi)
  document(): unknown {
    return this.openApi();
  }

  @Route(OPERATION_ROUTES.docs)
  @Header('content-type', 'text/html; charset=utf-8')
  // The page loads nothing: no script, no style or font from elsewhere.
  @Header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
  docs(): string {
    return (this.page ??= docsPage(this.openApi()));
  }

  private openApi(): ReturnType<typeof openApiDocument> {
    return (this.built ??= openApiDocument(this.routes));
  }
}
