// Package audit defines the append-only record of state changes made by admins
// (and later resellers and customers). Domain packages write entries in the same
// transaction as the change they describe.
package audit

import "time"

// Actor is who performed an action.
type Actor struct {
	Kind string // "admin", "token", "reseller", "customer", "system", "client"
	ID   string // for "admin" and "token" the admin's id
	Name string
	IP   string
	// Token is the personal access token ("<id> <name>") of a "token" actor.
	Token string
}

// System is the actor for changes keyward makes on its own (sweeps, bootstrap).
var System = Actor{Kind: "system", Name: "keyward"}

// Entry is one audit record.
type Entry struct {
	ID      int64          `json:"id"`
	At      time.Time      `json:"at"`
	Actor   Actor          `json:"-"`
	Action  string         `json:"action"`
	AppID   string         `json:"app_id,omitempty"`
	Target  string         `json:"target"`
	Details map[string]any `json:"details,omitempty"`
}

// NewEntry is the audit entry of a change made by actor at now: action on
// target of appID, with details.
func NewEntry(actor Actor, now time.Time, action, appID, target string, details map[string]any) Entry {
	return Entry{At: now, Actor: actor, Action: action, AppID: appID, Target: target, Details: details}
}
