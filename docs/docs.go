// Package docs holds documentation that ships inside the keyward binary.
package docs

import _ "embed"

// OpenAPI is the OpenAPI 3.1 description of keyward's HTTP API
// (docs/openapi.yaml), served at GET /api/openapi.yaml. The httpapi tests
// hold it to the route table.
//
//go:embed openapi.yaml
var OpenAPI []byte
