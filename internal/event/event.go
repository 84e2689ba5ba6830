// Package event names the webhook events and the outbox record every domain
// package writes in the same transaction as the change that caused it. The
// webhook dispatcher delivers what is recorded here.
package event

import "time"

// Event is one outbox row.
type Event struct {
	ID        int64
	AppID     string // empty for installation-wide events
	Type      string
	Data      map[string]any
	CreatedAt time.Time
}

// Event types of the API reference.
const (
	KeyCreated         = "key.created"
	KeyActivated       = "key.activated"
	KeyBanned          = "key.banned"
	KeyUnbanned        = "key.unbanned"
	KeyDeleted         = "key.deleted"
	KeyRotated         = "key.rotated"
	KeySuspectedLeak   = "key.suspected_leak"
	KeyExpiring        = "key_expiring"
	KeyExpired         = "key_expired"
	TrialCreated       = "trial.created"
	HWIDResetRequested = "hwid_reset.requested"
	AppRevoked         = "app.revoked"
	SuspiciousActivity = "suspicious_activity"
	NewOrder           = "new_order"
	OrderApproved      = "order.approved"
	UpdatePublished    = "update.published"
	Test               = "test" // a manual test delivery to one webhook

	// keyward's own events, beyond the API reference's list.
	AccountCreated = "account.created" // an app user account signed up
	KeyRedeemed    = "key.redeemed"    // a key's time went to an account
)
