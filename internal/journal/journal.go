// Package journal is the one record every domain change writes in its own
// transaction: an audit entry (who did what) and an outbox event (what
// webhooks will announce). Each domain package's Tx embeds Journal, so the
// entry and the event commit or roll back with the change they describe,
// and no package borrows another's transaction to write them.
package journal

import (
	"context"

	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
)

// Journal appends to the audit log and the event outbox inside a write
// transaction. The store implements it once for every domain Tx.
type Journal interface {
	// AddAudit appends one audit entry.
	AddAudit(ctx context.Context, e audit.Entry) error
	// AddEvent appends one outbox event for the webhook dispatcher.
	AddEvent(ctx context.Context, e event.Event) error
}
