package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/keyward/keyward/docs"
	"github.com/keyward/keyward/internal/kwtest"
)

// The OpenAPI description (docs/openapi.yaml) is held to the route table:
// every method of every route registered by API.Handler has an operation,
// and every operation is a registered route and method.
//
// HEAD is not implied by GET: the routes refuse every method they do not
// register (only(), the bearer dispatch), so HEAD is answered only where the
// route table lists it (the update download), and there it is documented as
// its own head operation, which this test requires like any other method.

// openAPIDoc parses the embedded description.
func openAPIDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatalf("load docs/openapi.yaml: %v", err)
	}
	return doc
}

func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	doc := openAPIDoc(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.yaml does not validate: %v", err)
	}
}

func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	doc := openAPIDoc(t)
	registered := map[string][]string{}
	for _, r := range kwtest.Routes(t) {
		if _, dup := registered[r.Path]; dup {
			t.Errorf("route %s is registered twice", r.Path)
		}
		registered[r.Path] = r.Methods
		item := doc.Paths.Value(r.Path)
		if item == nil {
			t.Errorf("route %s %v is not in docs/openapi.yaml", r.Path, r.Methods)
			continue
		}
		for _, m := range r.Methods {
			if item.GetOperation(m) == nil {
				t.Errorf("%s %s is registered but has no operation in docs/openapi.yaml", m, r.Path)
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		methods, ok := registered[path]
		if !ok {
			t.Errorf("docs/openapi.yaml documents %s, which is not a registered route", path)
			continue
		}
		for m := range item.Operations() {
			if !slices.Contains(methods, m) {
				t.Errorf("docs/openapi.yaml documents %s %s, but the route answers only %v", m, path, methods)
			}
		}
	}
}

// TestOpenAPIOrganised keeps the file's structure as routes are added: each
// operation is tagged with its area (by path), has an operationId and a
// summary, documents the refusals every route can give, and admin
// operations (but sign-in) require the bearer token. Envelope operations
// name inner schemas that exist.
func TestOpenAPIOrganised(t *testing.T) {
	t.Parallel()
	doc := openAPIDoc(t)
	declared := map[string]bool{}
	for _, tag := range doc.Tags {
		declared[tag.Name] = true
	}
	for _, want := range []string{"meta", "ops", "client", "customer", "admin", "reseller"} {
		if !declared[want] {
			t.Errorf("tag %q is not declared", want)
		}
	}
	ids := map[string]string{}
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		for method, op := range doc.Paths.Value(path).Operations() {
			where := method + " " + path
			if want := openAPIArea(path); len(op.Tags) != 1 || op.Tags[0] != want {
				t.Errorf("%s: tags %v, want [%s]", where, op.Tags, want)
			}
			if op.OperationID == "" || op.Summary == "" {
				t.Errorf("%s: needs an operationId and a summary", where)
			}
			if prev, dup := ids[op.OperationID]; dup {
				t.Errorf("%s: operationId %q is also used by %s", where, op.OperationID, prev)
			}
			ids[op.OperationID] = where
			for _, status := range []int{http.StatusMethodNotAllowed, http.StatusTooManyRequests, http.StatusInternalServerError} {
				if op.Responses.Status(status) == nil {
					t.Errorf("%s: response %d is not documented", where, status)
				}
			}
			if op.Security == nil {
				t.Errorf("%s: security is not stated (use [] for public routes)", where)
			}
			if strings.HasPrefix(path, "/api/admin/") && path != "/api/admin/login.php" && path != "/api/admin/totp.php" {
				if !openAPIRequires(op, "bearer") || op.Responses.Status(http.StatusUnauthorized) == nil {
					t.Errorf("%s: admin operations require bearer and document 401", where)
				}
			}
			if env, ok := op.Extensions["x-keyward-envelope"].(map[string]any); ok {
				for _, k := range []string{"request", "reply"} {
					ref, _ := env[k].(string)
					if name, found := strings.CutPrefix(ref, "#/components/schemas/"); ref != "" && (!found || doc.Components.Schemas[name] == nil) {
						t.Errorf("%s: x-keyward-envelope.%s %q names no schema", where, k, ref)
					}
				}
			}
		}
	}
}

// openAPIArea is the tag of a path's area.
func openAPIArea(path string) string {
	switch {
	case path == "/api/openapi.yaml":
		return "meta"
	case path == "/healthz" || path == "/readyz" || path == "/metrics":
		return "ops"
	case strings.HasPrefix(path, "/api/admin/"):
		return "admin"
	case strings.HasPrefix(path, "/api/customer/"):
		return "customer"
	case strings.HasPrefix(path, "/api/reseller/"):
		return "reseller"
	}
	return "client"
}

// openAPIRequires reports whether every security alternative of op needs scheme.
func openAPIRequires(op *openapi3.Operation, scheme string) bool {
	if op.Security == nil || len(*op.Security) == 0 {
		return false
	}
	for _, req := range *op.Security {
		if _, ok := req[scheme]; !ok {
			return false
		}
	}
	return true
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		r := s.Do("GET", "/api/openapi.yaml", nil, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET /api/openapi.yaml: %s", r)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/yaml" {
			t.Errorf("Content-Type %q, want application/yaml", ct)
		}
		if !bytes.Equal(r.Raw, docs.OpenAPI) {
			t.Errorf("GET /api/openapi.yaml served %d bytes that differ from docs.OpenAPI (%d bytes)", len(r.Raw), len(docs.OpenAPI))
		}
		r = s.Do("POST", "/api/openapi.yaml", nil, nil)
		kwtest.ExpectCode(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		if allow := r.Header.Get("Allow"); allow != "GET" {
			t.Errorf("Allow %q, want GET", allow)
		}
	})
}
