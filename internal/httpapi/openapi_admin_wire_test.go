package httpapi_test

import (
	"reflect"
	"testing"

	"github.com/keyward/keyward/wire"
)

// adminWireSchemas ties the admin API's documented record schemas (the
// objects its replies list and return) to the wire types the admin handlers
// encode and the dashboard decodes.
//
// A schema that also documents a request body (the settings PUT takes with
// every field optional, a reseller's products as POST and PUT take them)
// cannot mark the fields a reply always sends as required; for those,
// shared is set and only the fields are compared.
var adminWireSchemas = []struct {
	schema string
	types  []any
	shared bool
}{
	{"AppSettings", []any{wire.AppSettings{}}, true},
	{"FeatureFlag", []any{wire.FeatureFlag{}}, false},
	{"App", []any{wire.App{}}, true},
	{"UpstreamStatusReply", []any{wire.UpstreamStatusReply{}}, false},
	{"AdminKey", []any{wire.Key{}}, false},
	{"Device", []any{wire.Device{}}, false},
	{"Session", []any{wire.Session{}}, false},
	{"LicenseFile", []any{wire.LicenseFile{}}, false},
	{"LicenseFileStateReply", []any{wire.LicenseFileStateReply{}}, false},
	{"AuditEntry", []any{wire.AuditEntry{}}, false},
	{"AdminProfile", []any{wire.Profile{}}, false},
	{"AccessToken", []any{wire.AccessToken{}}, false},
	{"Member", []any{wire.Member{}}, false},
	{"Release", []any{wire.Release{}}, false},
	{"Artifact", []any{wire.Artifact{}}, false},
	{"Webhook", []any{wire.Webhook{}}, false},
	{"Delivery", []any{wire.Delivery{}}, false},
	{"Detection", []any{wire.Detection{}}, false},
	{"ResetRequestRecord", []any{wire.ResetRequest{}}, false},
	{"Reseller", []any{wire.Reseller{}}, true},
	{"LedgerEntry", []any{wire.LedgerEntry{}}, false},
	{"ResellerProduct", []any{wire.ResellerProduct{}}, true},
	{"AdminLink", []any{wire.AdminSocialLink{}}, false},
	{"ExplainReply", []any{wire.UpdateExplainReply{}}, false},
	{"StatsReply", []any{wire.UpdateStatsReply{}}, false},
	{"SigningKeysReply", []any{wire.SigningKeysReply{}}, false},
	{"ImportReport", []any{wire.ImportReport{}}, false},
	{"ImportReply", []any{wire.ImportReply{}}, false},
}

// The admin records documented in docs/openapi.yaml have exactly the
// fields of the wire types (both ways, nested objects included; a field is
// required exactly when it is always sent).
func TestOpenAPIAdminSchemasMatchWire(t *testing.T) {
	t.Parallel()
	doc := openAPIDoc(t)
	for _, ws := range adminWireSchemas {
		sref := doc.Components.Schemas[ws.schema]
		if sref == nil {
			t.Errorf("no component schema %s", ws.schema)
			continue
		}
		types := make([]reflect.Type, len(ws.types))
		for i, v := range ws.types {
			types[i] = reflect.TypeOf(v)
		}
		compareSchema(t, ws.schema, sref.Value, types, !ws.shared)
	}
}
