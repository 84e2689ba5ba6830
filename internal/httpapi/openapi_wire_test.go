package httpapi_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/wire"
)

// The OpenAPI description of every client route is held to the wire types
// the server encodes and the SDK decodes: for each documented request and
// reply schema (the inner ones of enveloped routes, named by
// x-keyward-envelope), every property is a json field of the wire type and
// every json field is a property, down through nested objects and arrays;
// a reply property is required exactly when the field is always sent (no
// omitempty or omitzero).

// wireSchema ties one documented schema of a route to the wire types it
// describes; several types are one schema whose fields are their union and
// whose required fields are those every type always sends.
type wireSchema struct {
	path, method string
	reply        bool
	schema       string // components/schemas name
	types        []any
}

var clientWireSchemas = []wireSchema{
	{"/api/auth/login.php", "POST", false, "LoginRequest", []any{wire.LoginRequest{}}},
	{"/api/auth/login.php", "POST", true, "LoginReply", []any{wire.LoginReply{}}},
	{"/api/auth/license-file.php", "POST", false, "LicenseFileRequest", []any{wire.LicenseFileRequest{}}},
	{"/api/auth/license-file.php", "POST", true, "LicenseFileReply", []any{wire.LicenseFileReply{}}},
	{"/api/auth/heartbeat.php", "POST", false, "HeartbeatRequest", []any{wire.HeartbeatRequest{}}},
	{"/api/auth/heartbeat.php", "POST", true, "HeartbeatReply", []any{wire.HeartbeatReply{}}},
	{"/api/auth/logout.php", "POST", false, "LogoutRequest", []any{wire.LogoutRequest{}}},
	{"/api/auth/logout.php", "POST", true, "Message", []any{wire.Reply{}}},
	{"/api/auth/check-key.php", "POST", false, "CheckKeyRequest", []any{wire.CheckKeyRequest{}}},
	{"/api/auth/check-key.php", "POST", true, "KeyReply", []any{wire.CheckKeyReply{}}},
	{"/api/update/validate.php", "POST", false, "CheckKeyRequest", []any{wire.CheckKeyRequest{}}},
	{"/api/update/validate.php", "POST", true, "KeyReply", []any{wire.CheckKeyReply{}}},
	{"/api/update/check.php", "POST", false, "UpdateCheckRequest", []any{wire.UpdateCheckRequest{}}},
	{"/api/update/check.php", "POST", true, "UpdateCheckReply", []any{wire.UpdateCheckReply{}}},
	{"/api/auth/request-hwid-reset.php", "POST", false, "HWIDResetRequest", []any{wire.HWIDResetRequest{}}},
	{"/api/auth/request-hwid-reset.php", "POST", true, "Message", []any{wire.Reply{}}},
	{"/api/customer/reset-hwid.php", "POST", false, "SelfResetRequest", []any{wire.SelfResetRequest{}}},
	{"/api/customer/reset-hwid.php", "POST", true, "SelfResetReply", []any{wire.SelfResetReply{}}},
	{"/api/auth/trial.php", "POST", false, "TrialRequest", []any{wire.TrialRequest{}}},
	{"/api/auth/trial.php", "POST", true, "TrialReply", []any{wire.TrialReply{}}},
	{"/api/auth/account-register.php", "POST", false, "RegisterRequest", []any{wire.RegisterRequest{}}},
	{"/api/auth/account-register.php", "POST", true, "RegisterReply", []any{wire.RegisterReply{}}},
	{"/api/auth/account-login.php", "POST", false, "AccountLoginRequest", []any{wire.AccountLoginRequest{}}},
	{"/api/auth/account-login.php", "POST", true, "AccountLoginReply", []any{wire.AccountLoginReply{}}},
	{"/api/auth/change-password.php", "POST", false, "ChangePasswordRequest", []any{wire.ChangePasswordRequest{}}},
	{"/api/auth/change-password.php", "POST", true, "Message", []any{wire.Reply{}}},
	{"/api/auth/account-redeem.php", "POST", false, "RedeemRequest", []any{wire.RedeemRequest{}}},
	{"/api/auth/account-redeem.php", "POST", true, "RedeemReply", []any{wire.RedeemReply{}}},
	{"/api/app/info.php", "GET", true, "InfoReply", []any{wire.InfoReply{}}},
	{"/api/app/text.php", "GET", true, "TextReply", []any{wire.TextsReply{}, wire.TextReply{}}},
	{"/api/app/slides.php", "POST", false, "SlidesRequest", []any{wire.SlidesRequest{}}},
	{"/api/app/slides.php", "POST", true, "SlidesReply", []any{wire.SlidesReply{}}},
	{"/api/app/social-click.php", "POST", false, "SocialClickRequest", []any{wire.SocialClickRequest{}}},
	{"/api/app/social-click.php", "POST", true, "Message", []any{wire.Reply{}}},
	{"/api/app/changelog.php", "GET", true, "ChangelogReply", []any{wire.ChangelogReply{}}},
	{"/api/app/pricing.php", "GET", true, "PricingReply", []any{wire.PricingReply{}}},
	{"/api/app/public-keys.php", "GET", true, "PublicKeysReply", []any{wire.PublicKeysReply{}}},
	{"/api/app/pricing.php", "GET", true, "SubscriptionCheckReply", []any{wire.SubscriptionCheckReply{}}},
	{"/api/app/pricing.php", "POST", false, "CreateOrderRequest", []any{wire.OrderRequest{}}},
	{"/api/app/pricing.php", "POST", true, "OrderCreatedReply", []any{wire.OrderReply{}}},
	{"/api/app/fulfill.php", "POST", false, "FulfillRequest", []any{wire.FulfillRequest{}}},
	{"/api/app/fulfill.php", "POST", true, "FulfillReply", []any{wire.FulfillReply{}}},
}

// clientRoute reports whether a registered path is a client route with
// wire types (the update download streams bytes).
func clientRoute(path string) bool {
	switch {
	case path == "/api/update/download.php":
		return false
	case path == "/api/customer/reset-hwid.php":
		return true
	}
	return strings.HasPrefix(path, "/api/auth/") || strings.HasPrefix(path, "/api/app/") || strings.HasPrefix(path, "/api/update/")
}

func TestOpenAPIClientSchemasMatchWire(t *testing.T) {
	doc := openAPIDoc(t)
	covered := map[string]bool{}
	for _, ws := range clientWireSchemas {
		covered[ws.method+" "+ws.path] = true
		op := doc.Paths.Value(ws.path).GetOperation(ws.method)
		if op == nil {
			t.Errorf("%s %s: no operation", ws.method, ws.path)
			continue
		}
		if refs := documentedSchemas(op, ws.reply); !slices.Contains(refs, ws.schema) {
			t.Errorf("%s %s: documented %s schemas are %v, not %s", ws.method, ws.path, kind(ws.reply), refs, ws.schema)
		}
		sref := doc.Components.Schemas[ws.schema]
		if sref == nil {
			t.Errorf("%s %s: no component schema %s", ws.method, ws.path, ws.schema)
			continue
		}
		types := make([]reflect.Type, len(ws.types))
		for i, v := range ws.types {
			types[i] = reflect.TypeOf(v)
		}
		compareSchema(t, ws.schema, sref.Value, types, ws.reply)
	}
	for _, r := range kwtest.Routes(t) {
		if !clientRoute(r.Path) {
			continue
		}
		for _, m := range r.Methods {
			if !covered[m+" "+r.Path] {
				t.Errorf("client route %s %s has no wire types in clientWireSchemas", m, r.Path)
			}
		}
	}
}

func kind(reply bool) string {
	if reply {
		return "reply"
	}
	return "request"
}

// documentedSchemas names the component schemas an operation documents for
// its (inner) request or its success reply: x-keyward-envelope's request or
// reply, else the JSON request body or 200 reply, one of a oneOf included.
func documentedSchemas(op *openapi3.Operation, reply bool) []string {
	var out []string
	if ext, ok := op.Extensions["x-keyward-envelope"].(map[string]any); ok {
		if ref, ok := ext[kind(reply)].(string); ok {
			out = append(out, strings.TrimPrefix(ref, "#/components/schemas/"))
		}
	}
	var content openapi3.Content
	if !reply && op.RequestBody != nil && op.RequestBody.Value != nil {
		content = op.RequestBody.Value.Content
	}
	if reply && op.Responses != nil {
		if r := op.Responses.Value("200"); r != nil && r.Value != nil {
			content = r.Value.Content
		}
	}
	if mt := content.Get("application/json"); mt != nil && mt.Schema != nil {
		out = append(out, schemaNames(mt.Schema)...)
	}
	return out
}

func schemaNames(s *openapi3.SchemaRef) []string {
	if s.Ref != "" {
		return []string{strings.TrimPrefix(s.Ref, "#/components/schemas/")}
	}
	var out []string
	for _, o := range s.Value.OneOf {
		out = append(out, schemaNames(o)...)
	}
	return out
}

// properties merges a schema's properties and required names with those of
// its allOf parts.
func properties(s *openapi3.Schema) (map[string]*openapi3.SchemaRef, map[string]bool) {
	props, req := map[string]*openapi3.SchemaRef{}, map[string]bool{}
	for name, p := range s.Properties {
		props[name] = p
	}
	for _, r := range s.Required {
		req[r] = true
	}
	for _, part := range s.AllOf {
		pp, rr := properties(part.Value)
		for name, p := range pp {
			if _, ok := props[name]; !ok {
				props[name] = p
			}
		}
		for r := range rr {
			req[r] = true
		}
	}
	return props, req
}

// jsonField is one json-encoded field of a wire type.
type jsonField struct {
	typ    reflect.Type
	always bool // no omitempty/omitzero: always sent
}

// jsonFields lists the json fields of struct type t, promoting the fields
// of embedded structs as encoding/json does.
func jsonFields(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for n, jf := range jsonFields(f.Type) {
				out[n] = jf
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		out[name] = jsonField{typ: f.Type, always: !omit}
	}
	return out
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage(nil))
)

// objectType is the struct a field holds (through pointers and slices), or
// nil for scalars, times, maps and raw JSON.
func objectType(t reflect.Type) reflect.Type {
	if t == rawType {
		return nil
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType {
		return nil
	}
	return t
}

// itemSchema is the object schema a property holds: itself, or its array
// items.
// items, or the object of a oneOf with null.
func itemSchema(s *openapi3.Schema) *openapi3.Schema {
	if s.Items != nil && s.Items.Value != nil {
		return s.Items.Value
	}
	for _, o := range s.OneOf {
		if o.Value != nil && (len(o.Value.Properties) > 0 || len(o.Value.AllOf) > 0) {
			return o.Value
		}
	}
	return s
}

func compareSchema(t *testing.T, where string, s *openapi3.Schema, types []reflect.Type, reply bool) {
	t.Helper()
	props, required := properties(s)
	fields := map[string]jsonField{}
	for i, typ := range types {
		fs := jsonFields(typ)
		for name, f := range fields { // always only when every type always sends it
			if g, ok := fs[name]; !ok || !g.always {
				f.always = false
				fields[name] = f
			}
		}
		for name, f := range fs {
			if _, ok := fields[name]; !ok {
				f.always = f.always && i == 0
				fields[name] = f
			}
		}
	}
	for _, name := range sortedKeys(props) {
		if _, ok := fields[name]; !ok {
			t.Errorf("%s.%s is documented but is no json field of %v", where, name, types)
		}
	}
	for _, name := range sortedKeys(fields) {
		f := fields[name]
		p, ok := props[name]
		if !ok {
			t.Errorf("%s: json field %s of %v is not documented", where, name, types)
			continue
		}
		if reply && f.always != required[name] {
			t.Errorf("%s.%s: required = %v in the description, but the field is always sent = %v", where, name, required[name], f.always)
		}
		if ot := objectType(f.typ); ot != nil && p.Value != nil {
			compareSchema(t, where+"."+name, itemSchema(p.Value), []reflect.Type{ot}, reply)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The documented refusal (Error, with the clock refusal's extra fields) is
// wire.ErrorReply, field for field.
func TestOpenAPIErrorMatchesWire(t *testing.T) {
	doc := openAPIDoc(t)
	compareSchema(t, "CryptoError", doc.Components.Schemas["CryptoError"].Value, []reflect.Type{reflect.TypeOf(wire.ErrorReply{})}, false)
}

// The documented ErrorCode enum is exactly the wire package's Code
// constants.
func TestOpenAPIErrorCodesMatchWire(t *testing.T) {
	doc := openAPIDoc(t)
	documented := map[string]bool{}
	for _, v := range doc.Components.Schemas["ErrorCode"].Value.Enum {
		documented[v.(string)] = true
	}
	consts := wireCodeConstants(t)
	for _, c := range sortedKeys(documented) {
		if _, ok := consts[c]; !ok {
			t.Errorf("ErrorCode %s is documented but is no wire constant", c)
		}
	}
	for _, c := range sortedKeys(consts) {
		if !documented[c] {
			t.Errorf("wire.%s = %q is not in the documented ErrorCode enum", consts[c], c)
		}
	}
}

// wireCodeConstants maps the value of every wire.Code* constant to its
// name, read from the package source.
func wireCodeConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "..", "wire", "codes.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || !strings.HasPrefix(name.Name, "Code") {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[v] = name.Name
			}
		}
	}
	if len(out) < 40 {
		t.Fatalf("read %d wire codes from wire/codes.go, want all of them", len(out))
	}
	return out
}

// portalWireSchemas ties the customer portal's documented request and
// reply schemas (/api/customer/* but reset-hwid.php, a client route) to the
// wire types of wire/portal.go the portal encodes.
var portalWireSchemas = []wireSchema{
	{"/api/customer/login.php", "POST", true, "CustomerLoginReply", []any{wire.CustomerLoginReply{}}},
	{"/api/customer/key.php", "GET", true, "CustomerKeyReply", []any{wire.CustomerKeyReply{}}},
	{"/api/customer/sessions.php", "POST", true, "Message", []any{wire.MessageReply{}}},
	{"/api/customer/sessions.php", "DELETE", true, "Message", []any{wire.MessageReply{}}},
	{"/api/customer/orders.php", "GET", true, "CustomerOrdersReply", []any{wire.CustomerOrdersReply{}}},
	{"/api/customer/subscriptions.php", "GET", true, "CustomerSubscriptionsReply", []any{wire.CustomerSubscriptionsReply{}}},
	{"/api/customer/subscriptions.php", "POST", true, "CustomerCancelReply", []any{wire.CustomerCancelReply{}}},
	{"/api/customer/offline-activate.php", "POST", true, "LicenseFileReply", []any{wire.LicenseFileReply{}}},
	{"/api/customer/license-files.php", "POST", true, "CustomerLicenseFileReply", []any{wire.CustomerLicenseFileReply{}}},
}

// The customer portal's replies documented in docs/openapi.yaml have
// exactly the fields of the wire types (nested objects included; a field
// is required exactly when it is always sent), and every customer route
// has its reply listed here.
func TestOpenAPIPortalSchemasMatchWire(t *testing.T) {
	t.Parallel()
	doc := openAPIDoc(t)
	covered := map[string]bool{}
	for _, ws := range portalWireSchemas {
		covered[ws.method+" "+ws.path] = true
		pi := doc.Paths.Value(ws.path)
		if pi == nil || pi.GetOperation(ws.method) == nil {
			t.Errorf("%s %s: no operation", ws.method, ws.path)
			continue
		}
		op := pi.GetOperation(ws.method)
		if refs := documentedSchemas(op, ws.reply); !slices.Contains(refs, ws.schema) {
			t.Errorf("%s %s: documented %s schemas are %v, not %s", ws.method, ws.path, kind(ws.reply), refs, ws.schema)
		}
		sref := doc.Components.Schemas[ws.schema]
		if sref == nil {
			t.Errorf("%s %s: no component schema %s", ws.method, ws.path, ws.schema)
			continue
		}
		types := make([]reflect.Type, len(ws.types))
		for i, v := range ws.types {
			types[i] = reflect.TypeOf(v)
		}
		compareSchema(t, ws.schema, sref.Value, types, ws.reply)
	}
	for _, r := range kwtest.Routes(t) {
		if !strings.HasPrefix(r.Path, "/api/customer/") || clientRoute(r.Path) {
			continue
		}
		for _, m := range r.Methods {
			if !covered[m+" "+r.Path] {
				t.Errorf("customer route %s %s has no wire types in portalWireSchemas", m, r.Path)
			}
		}
	}
}
