package adminapi

import (
	"encoding/json"
	"slices"
	"strings"
)

// Personal access tokens are for scripts: they may do what their owner's
// roles allow, except create or change a credential — a password, a token,
// a secret or the two-factor state of anyone. Otherwise a token could mint
// a sign-in that needs no second factor and outlives the token's revocation
// (a new owner with a password, a fresh token, a reseller token, a new app
// or webhook secret). The route table declares these requests per method
// (and action), and bearer refuses them to tokens with TOKEN_NOT_ALLOWED
// (403) before anything else happens; the admin service refuses its own
// credential changes to tokens as well.
//
// Not credentials in this sense, and allowed: revoking tokens (removes
// access only), creating apps, webhooks or license keys (new records whose
// secrets exist with them; license keys are the product scripts exist to
// make), rotating a license key (the token could read the key already).
// Creating an app with a given "secret" (adopting the secret of an app moved
// from another service) is allowed too: the app is new, the secret is a
// client credential of that app only (never an admin sign-in), the reply
// shows a generated one to the token anyway, and secrets are unique, so no
// existing app's secret can be taken over. Replacing an existing app's
// secret (regenerate-secret, set-secret) is refused: it cuts off every
// shipped copy, which only a signed-in owner decides.

// credRule says which requests of a method create or change a credential.
type credRule struct {
	// field: requests whose body has this field (members.php's password,
	// which creates the admin it names).
	field string
	// actions: requests whose action (query or body) is one of these; ""
	// is the request without an action. No field and no actions: every
	// request.
	actions []string
}

// credential marks every request of o as changing a credential.
func credential(o op) op { o.cred = &credRule{}; return o }

// credentialWith marks the requests of o whose body has field.
func credentialWith(field string, o op) op { o.cred = &credRule{field: field}; return o }

// credentialOn marks the requests of o whose action is one of actions.
func credentialOn(o op, actions ...string) op { o.cred = &credRule{actions: actions}; return o }

// matches reports whether c is one of the requests r marks (false for nil).
func (r *credRule) matches(c *adminCall) bool {
	switch {
	case r == nil:
		return false
	case r.field != "":
		if _, ok := c.f[r.field]; ok {
			return true
		}
		// Settings travel at the top level or in a "settings" object.
		var settings map[string]json.RawMessage
		if raw, ok := c.f["settings"]; ok && json.Unmarshal(raw, &settings) == nil {
			_, ok := settings[r.field]
			return ok
		}
		return false
	case len(r.actions) == 0:
		return true
	}
	action, err := c.param("action")
	if err != nil {
		// Not a string: the handler refuses it; for a route whose plain
		// request (no action) is a credential change, refuse now.
		return slices.Contains(r.actions, "")
	}
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-") }
	for _, x := range r.actions {
		if norm(x) == norm(action) {
			return true
		}
	}
	return false
}

// describe lists the requests r marks for method, as Route.TokenRefused
// shows them.
func (r *credRule) describe(method string) []string {
	switch {
	case r == nil:
		return nil
	case r.field != "":
		return []string{method + " with " + r.field}
	case len(r.actions) == 0:
		return []string{method}
	}
	var out []string
	for _, x := range r.actions {
		if x == "" {
			out = append(out, method+" without action")
		} else {
			out = append(out, method+" action="+x)
		}
	}
	return out
}
