package adminapi

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/webhook"
	"github.com/keyward/keyward/wire"
)

// Admin webhooks.php: destinations, the delivery log, tests and
// redelivery. See docs/webhooks.md.

func webhookView(d *webhook.Destination, withSecret bool) wire.Webhook {
	events := d.Events
	if events == nil {
		events = []string{}
	}
	v := wire.Webhook{ID: d.ID, AppID: nullStr(d.AppID), URL: d.URL, Events: events, Description: d.Description,
		Enabled: d.Enabled, Paused: d.PausedAt != nil, PausedAt: license.OptTimestamp(d.PausedAt), Failures: d.Failures,
		CreatedAt: license.Timestamp(d.CreatedAt), UpdatedAt: license.Timestamp(d.UpdatedAt)}
	if withSecret {
		v.Secret = d.Secret
	}
	return v
}

// nullStr is s, or nil (JSON null) for "".
func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deliveryView(d *webhook.Delivery) wire.Delivery {
	v := wire.Delivery{ID: d.ID, WebhookID: d.DestinationID, Event: d.Event, AppID: nullStr(d.AppID), Status: d.Status,
		Attempts: d.Attempts, CreatedAt: license.Timestamp(d.CreatedAt), UpdatedAt: license.Timestamp(d.UpdatedAt)}
	if d.Status == webhook.Pending {
		v.NextAttemptAt = license.OptTimestamp(&d.NextAttemptAt)
	}
	return v
}

// destination loads a webhook destination the caller may act on with the
// route's permission.
func (a *API) destination(ctx context.Context, c *adminCall, id int64) (*webhook.Destination, error) {
	d, err := a.webhooks.Destination(ctx, id)
	if err != nil {
		return nil, err
	}
	return d, a.within(ctx, c, d.AppID)
}

// deliveryScope checks the caller may act on a delivery: on its destination.
func (a *API) deliveryScope(ctx context.Context, c *adminCall, deliveryID string) error {
	d, _, err := a.webhooks.Delivery(ctx, deliveryID)
	if err != nil {
		return err
	}
	_, err = a.destination(ctx, c, d.DestinationID)
	return err
}

// seesSecrets reports whether the caller may read the signing secret of a
// destination of appID: admins and owners of the app, operators for those
// of every app.
func seesSecrets(c *adminCall, appID string) bool {
	if appID == "" {
		return c.p.Operator
	}
	return c.role.Allows(admin.PermManage)
}

// getWebhooks: GET webhooks.php[?app_id=] lists destinations (an app's and
// those for every app); ?id= one with its secret; ?action=deliveries lists
// the log; ?action=delivery&delivery_id= one delivery with its attempts.
func (a *API) getWebhooks(ctx context.Context, c *adminCall) (any, error) {
	appID := c.appID
	switch c.q.Get("action") {
	case "deliveries":
		return a.listDeliveries(ctx, c, appID)
	case "delivery":
		id := strings.TrimSpace(c.q.Get("delivery_id"))
		if err := a.deliveryScope(ctx, c, id); err != nil {
			return nil, err
		}
		d, attempts, err := a.webhooks.Delivery(ctx, id)
		if err != nil {
			return nil, err
		}
		list := make([]wire.DeliveryAttempt, 0, len(attempts))
		for _, at := range attempts {
			list = append(list, wire.DeliveryAttempt{Attempt: at.Attempt, At: license.Timestamp(at.At), StatusCode: at.StatusCode,
				DurationMS: at.Duration.Milliseconds(), Response: at.Response, Error: at.Error})
		}
		v := deliveryView(d)
		v.Body = json.RawMessage(d.Body)
		return wire.DeliveryReply{Success: true, Delivery: v, Attempts: list}, nil
	case "":
	default:
		return nil, apperr.InvalidField("action", "use deliveries or delivery")
	}
	if c.q.Get("id") != "" {
		id, err := recordID(c)
		if err != nil {
			return nil, err
		}
		d, err := a.destination(ctx, c, id)
		if err != nil {
			return nil, err
		}
		return wire.WebhookReply{Success: true, Webhook: webhookView(d, seesSecrets(c, d.AppID))}, nil
	}
	if err := a.within(ctx, c, appID); err != nil {
		return nil, err
	}
	ds, err := a.webhooks.Destinations(ctx, appID)
	if err != nil {
		return nil, err
	}
	list := make([]wire.Webhook, 0, len(ds))
	for i := range ds {
		if ds[i].AppID == "" && !c.p.Operator {
			continue // every app's destinations are the operators'
		}
		list = append(list, webhookView(&ds[i], false))
	}
	return wire.WebhookListReply{Success: true, Webhooks: list}, nil
}

func (a *API) listDeliveries(ctx context.Context, c *adminCall, appID string) (any, error) {
	f := webhook.DeliveryFilter{AppID: appID, Status: c.q.Get("status")}
	var err error
	if f.DestinationID, err = queryInt(c, "id"); err != nil {
		return nil, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	f.Limit = int(limit)
	if f.DestinationID != 0 {
		_, err = a.destination(ctx, c, f.DestinationID)
	} else {
		err = a.within(ctx, c, appID)
	}
	if err != nil {
		return nil, err
	}
	switch f.Status {
	case "", webhook.Pending, webhook.Succeeded, webhook.Failed:
	default:
		return nil, apperr.InvalidField("status", "use pending, succeeded or failed")
	}
	ds, err := a.webhooks.Deliveries(ctx, f)
	if err != nil {
		return nil, err
	}
	list := make([]wire.Delivery, 0, len(ds))
	for i := range ds {
		list = append(list, deliveryView(&ds[i]))
	}
	return wire.DeliveryListReply{Success: true, Deliveries: list}, nil
}

// eventsField reads "events" as a JSON array of names or a comma-separated
// string; given reports whether it was there.
func eventsField(f edge.Fields) (events []string, given bool, err error) {
	raw, ok := f["events"]
	if !ok || string(raw) == "null" {
		return nil, ok, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, true, apperr.InvalidField("events", "must be a list of event names")
		}
		list = strings.Split(s, ",")
	}
	out := []string{}
	for _, e := range list {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out, true, nil
}

// postWebhooks: POST webhooks.php creates a destination {app_id?, url,
// events?, description?}, or with action= one of rotate_secret, enable,
// disable, test, redeliver, redeliver_failed.
func (a *API) postWebhooks(ctx context.Context, c *adminCall) (any, error) {
	action, err := c.param("action")
	if err != nil {
		return nil, err
	}
	switch action {
	case "", "create":
		return a.createWebhook(ctx, c)
	case "redeliver":
		id, err := c.required("delivery_id")
		if err != nil {
			return nil, err
		}
		if err := a.deliveryScope(ctx, c, id); err != nil {
			return nil, err
		}
		d, err := a.webhooks.Redeliver(ctx, c.actor, id)
		if err != nil {
			return nil, err
		}
		return wire.DeliveryQueuedReply{Success: true, Message: "Delivery queued.", Delivery: deliveryView(d)}, nil
	case "redeliver_failed":
		return a.redeliverFailed(ctx, c)
	}
	id, err := recordID(c)
	if err != nil {
		return nil, err
	}
	d, err := a.destination(ctx, c, id)
	if err != nil {
		return nil, err
	}
	switch action {
	case "rotate_secret":
		d, err = a.webhooks.RotateSecret(ctx, c.actor, id)
	case "enable", "disable":
		on := action == "enable"
		d, err = a.webhooks.EditDestination(ctx, c.actor, id, webhook.Edit{Enabled: &on})
	case "test":
		did, err := a.webhooks.SendTest(ctx, c.actor, id)
		if err != nil {
			return nil, err
		}
		return wire.TestQueuedReply{Success: true, Message: "Test event queued.", DeliveryID: did}, nil
	default:
		return nil, apperr.InvalidField("action", "use create, rotate_secret, enable, disable, test, redeliver or redeliver_failed")
	}
	if err != nil {
		return nil, err
	}
	return wire.WebhookReply{Success: true, Webhook: webhookView(d, action == "rotate_secret")}, nil
}

func (a *API) createWebhook(ctx context.Context, c *adminCall) (any, error) {
	appID := c.appID
	if err := a.within(ctx, c, appID); err != nil {
		return nil, err
	}
	d := &webhook.Destination{AppID: appID}
	var err error
	if d.URL, err = c.required("url"); err != nil {
		return nil, err
	}
	if d.Events, _, err = eventsField(c.f); err != nil {
		return nil, err
	}
	if err = setStr(c.f, "description", &d.Description); err != nil {
		return nil, err
	}
	if err := a.webhooks.CreateDestination(ctx, c.actor, d); err != nil {
		return nil, err
	}
	return wire.WebhookReply{Success: true, Message: "Webhook created; keep its secret to verify signatures.",
		Webhook: webhookView(d, true)}, nil
}

// redeliverFailed requeues failed deliveries created since `since` (ISO
// 8601, required) of one destination (id) or of an app's (app_id).
func (a *API) redeliverFailed(ctx context.Context, c *adminCall) (any, error) {
	appID := c.appID
	id, _, err := c.f.Int("id")
	if err == nil && id == 0 {
		id, err = queryInt(c, "id")
	}
	if err != nil {
		return nil, err
	}
	if id != 0 {
		_, err = a.destination(ctx, c, id)
	} else {
		err = a.within(ctx, c, appID)
	}
	if err != nil {
		return nil, err
	}
	raw, err := c.required("since")
	if err != nil {
		return nil, err
	}
	since, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return nil, apperr.InvalidField("since", "must be an ISO 8601 time such as 2026-11-20T00:00:00Z")
	}
	n, err := a.webhooks.RedeliverFailed(ctx, c.actor, appID, id, since)
	if err != nil {
		return nil, err
	}
	return wire.CountReply{Success: true, Message: "Failed deliveries queued.", Count: n}, nil
}

// putWebhook: PUT webhooks.php {id, url?, events?, description?, enabled?}.
func (a *API) putWebhook(ctx context.Context, c *adminCall) (any, error) {
	id, err := recordID(c)
	if err != nil {
		return nil, err
	}
	var e webhook.Edit
	for _, p := range []struct {
		dst  **string
		name string
	}{{&e.URL, "url"}, {&e.Description, "description"}} {
		if _, ok := c.f[p.name]; ok {
			v, err := c.f.Str(p.name)
			if err != nil {
				return nil, err
			}
			*p.dst = &v
		}
	}
	if evs, given, err := eventsField(c.f); err != nil {
		return nil, err
	} else if given {
		if evs == nil {
			evs = []string{}
		}
		e.Events = &evs
	}
	if v, ok, err := c.f.Bool("enabled"); err != nil {
		return nil, err
	} else if ok {
		e.Enabled = &v
	}
	if e == (webhook.Edit{}) {
		return nil, apperr.Missing("url, events, description or enabled")
	}
	if _, err := a.destination(ctx, c, id); err != nil {
		return nil, err
	}
	d, err := a.webhooks.EditDestination(ctx, c.actor, id, e)
	if err != nil {
		return nil, err
	}
	return wire.WebhookReply{Success: true, Message: "Webhook saved.", Webhook: webhookView(d, false)}, nil
}

// deleteWebhook: DELETE webhooks.php {id}.
func (a *API) deleteWebhook(ctx context.Context, c *adminCall) (any, error) {
	id, err := recordID(c)
	if err != nil {
		return nil, err
	}
	if _, err := a.destination(ctx, c, id); err != nil {
		return nil, err
	}
	if err := a.webhooks.DeleteDestination(ctx, c.actor, id); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Webhook deleted."}, nil
}
