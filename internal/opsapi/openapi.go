package opsapi

import (
	"net/http"
	"strconv"

	"github.com/keyward/keyward/docs"
)

// openAPI: GET /api/openapi.yaml (public) → the embedded OpenAPI description.
func openAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/yaml")
	h.Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
	w.WriteHeader(http.StatusOK)
	w.Write(docs.OpenAPI)
}
