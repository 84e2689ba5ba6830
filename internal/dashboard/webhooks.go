package dashboard

import (
	"github.com/keyward/keyward/wire"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// routesWebhooks: an app's webhook destinations (list, create, edit,
// pause/resume, rotate secret, test, delete) and each one's delivery log
// with redelivery.
func (d *Dashboard) routesWebhooks(m *http.ServeMux) {
	d.page(m, "GET /dashboard/apps/{app}/webhooks", d.webhooksList)
	d.page(m, "POST /dashboard/apps/{app}/webhooks", d.webhookCreate)
	d.page(m, "GET /dashboard/apps/{app}/webhooks/{id}", d.webhookShow)
	d.page(m, "POST /dashboard/apps/{app}/webhooks/{id}/edit", d.webhookEdit)
	d.page(m, "POST /dashboard/apps/{app}/webhooks/{id}/rotate", d.webhookRotate)
	d.page(m, "POST /dashboard/apps/{app}/webhooks/{id}/delete", d.webhookDelete)
	d.page(m, "POST /dashboard/apps/{app}/webhooks/{id}/redeliver", d.webhookRedeliver)
	d.page(m, "POST /dashboard/apps/{app}/webhooks/{id}/{action}", d.webhookAction)
}

const webhooksAPI = "/api/admin/webhooks.php"

// webhookEvents are the event types of docs/webhooks.md (a test keeps the
// two lists equal), offered as checkboxes; the API takes any well-formed
// name, "family.*" too.
var webhookEvents = []string{
	"key.created", "key.activated", "key.banned", "key.unbanned", "key.deleted", "key.rotated", "key.redeemed",
	"key.suspected_leak", "key_expiring", "key_expired", "hwid_reset.requested", "trial.created", "account.created",
	"seat.denied", "license_file.issued",
	"changelog.published", "update.published", "new_order", "order.approved", "subscription.created",
	"subscription.renewed", "subscription.renewal_order_created", "subscription.cancelled", "app.revoked",
	"suspicious_activity", "test",
}

// responseShown is how much of a receiver's answer the log page shows.
const responseShown = 300

func (d *Dashboard) webhooksList(c *Ctx) {
	var out wire.WebhookListReply
	if err := c.Call("GET", webhooksAPI, c.AppQuery(), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	// The last delivery of each destination.
	rows := make([]webhookRow, len(out.Webhooks))
	for i, w := range out.Webhooks {
		rows[i].Webhook = w
		var dl wire.DeliveryListReply
		if err := c.Call("GET", webhooksAPI, c.AppQuery("action", "deliveries", "id", strconv.FormatInt(w.ID, 10), "limit", "1"), nil, &dl); err == nil && len(dl.Deliveries) > 0 {
			rows[i].Last = &dl.Deliveries[0]
		}
	}
	c.Render("webhooks", Page{Title: "Webhooks", Nav: "webhooks", Data: map[string]any{"Webhooks": rows, "Events": webhookEvents}})
}

// webhookRow is a destination in the list, with its last delivery (nil
// before the first).
type webhookRow struct {
	wire.Webhook
	Last *wire.Delivery
}

// deliveryRow is a delivery in the log, with its attempts (answers cut to
// responseShown).
type deliveryRow struct {
	wire.Delivery
	AttemptLog []wire.DeliveryAttempt
}

// eventsFromForm reads the checked events and any extra names (comma or
// space separated, e.g. "subscription.*"); none means every event.
func eventsFromForm(r *http.Request) []string {
	evs := []string{}
	seen := map[string]bool{}
	add := func(e string) {
		if e = strings.TrimSpace(e); e != "" && !seen[e] {
			seen[e] = true
			evs = append(evs, e)
		}
	}
	for _, e := range r.PostForm["events"] {
		add(e)
	}
	for _, e := range strings.FieldsFunc(r.PostFormValue("events_extra"), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		add(e)
	}
	return evs
}

func (d *Dashboard) webhookCreate(c *Ctx) {
	body := wire.WebhookRequest{URL: strings.TrimSpace(c.R.PostFormValue("url")), Events: eventsFromForm(c.R),
		Description: strings.TrimSpace(c.R.PostFormValue("description"))}
	var out wire.WebhookReply
	if err := c.Call("POST", webhooksAPI, c.AppQuery(), body, &out); err != nil {
		c.Done(c.AppPath("webhooks"), "", err)
		return
	}
	c.Render("webhook_secret", Page{Title: "Webhook created", Nav: "webhooks", Data: map[string]any{"Webhook": out.Webhook, "New": true}})
}

// webhookID reads {id} and loads the destination, which must be this app's
// (or, for operators, one for every app).
func webhookID(c *Ctx) (int64, *wire.Webhook, bool) {
	notFound := &APIError{Status: http.StatusNotFound, Code: wire.CodeNotFound, Message: "There is no such webhook."}
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		c.Fail(notFound)
		return 0, nil, false
	}
	var out wire.WebhookReply
	if err := c.Call("GET", webhooksAPI, c.AppQuery("id", strconv.FormatInt(id, 10)), nil, &out); err != nil {
		c.Fail(err)
		return 0, nil, false
	}
	if app := out.Webhook.AppID; app != nil && *app != "" && *app != c.AppID {
		c.Fail(notFound)
		return 0, nil, false
	}
	out.Webhook.Secret = "" // shown only on creation and rotation
	return id, &out.Webhook, true
}

func webhookPath(c *Ctx, id int64) string { return c.AppPath("webhooks/" + strconv.FormatInt(id, 10)) }

func (d *Dashboard) webhookShow(c *Ctx) {
	id, w, ok := webhookID(c)
	if !ok {
		return
	}
	status := c.R.URL.Query().Get("status")
	var dl wire.DeliveryListReply
	if err := c.Call("GET", webhooksAPI, c.AppQuery("action", "deliveries", "id", strconv.FormatInt(id, 10), "status", status, "limit", "25"), nil, &dl); err != nil {
		c.Fail(err)
		return
	}
	rows := make([]deliveryRow, len(dl.Deliveries))
	for i, del := range dl.Deliveries {
		rows[i].Delivery = del
		var one wire.DeliveryReply
		if err := c.Call("GET", webhooksAPI, c.AppQuery("action", "delivery", "delivery_id", del.ID), nil, &one); err != nil {
			continue
		}
		for j := range one.Attempts {
			one.Attempts[j].Response = truncate(one.Attempts[j].Response, responseShown)
		}
		rows[i].AttemptLog = one.Attempts
	}
	checked := map[string]bool{}
	var extra []string
	known := map[string]bool{}
	for _, e := range webhookEvents {
		known[e] = true
	}
	for _, e := range w.Events {
		checked[e] = true
		if !known[e] {
			extra = append(extra, e)
		}
	}
	c.Render("webhook", Page{Title: "Webhook " + w.URL, Nav: "webhooks", Data: map[string]any{
		"Webhook": w, "Deliveries": rows, "Events": webhookEvents, "Checked": checked, "Extra": strings.Join(extra, ", "),
		"Status": status}})
}

// truncate shortens s to at most n bytes (on a rune boundary), marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func (d *Dashboard) webhookEdit(c *Ctx) {
	id, _, ok := webhookID(c)
	if !ok {
		return
	}
	body := wire.WebhookRequest{ID: id, URL: strings.TrimSpace(c.R.PostFormValue("url")), Events: eventsFromForm(c.R),
		Description: strings.TrimSpace(c.R.PostFormValue("description"))}
	c.Done(webhookPath(c, id), "Webhook saved.", c.Call("PUT", webhooksAPI, c.AppQuery(), body, nil))
}

// webhookAction: enable (resume, also lifting an automatic pause), disable
// (pause) and test.
func (d *Dashboard) webhookAction(c *Ctx) {
	id, _, ok := webhookID(c)
	if !ok {
		return
	}
	msgs := map[string]string{"enable": "Webhook resumed.", "disable": "Webhook paused: no new events are queued for it.", "test": "Test event queued."}
	action := c.R.PathValue("action")
	msg, known := msgs[action]
	if !known {
		c.Fail(&APIError{Status: http.StatusNotFound, Code: wire.CodeNotFound, Message: "There is no such page."})
		return
	}
	c.Done(webhookPath(c, id), msg, c.Call("POST", webhooksAPI, c.AppQuery(), wire.WebhookActionRequest{Action: action, ID: id}, nil))
}

func (d *Dashboard) webhookRotate(c *Ctx) {
	id, _, ok := webhookID(c)
	if !ok {
		return
	}
	if !c.Confirm("Rotate the signing secret?", "The new secret is in force at once: the receiver must verify with it from now on.") {
		return
	}
	var out wire.WebhookReply
	if err := c.Call("POST", webhooksAPI, c.AppQuery(), wire.WebhookActionRequest{Action: "rotate_secret", ID: id}, &out); err != nil {
		c.Done(webhookPath(c, id), "", err)
		return
	}
	c.Render("webhook_secret", Page{Title: "New signing secret", Nav: "webhooks", Data: map[string]any{"Webhook": out.Webhook}})
}

func (d *Dashboard) webhookDelete(c *Ctx) {
	id, _, ok := webhookID(c)
	if !ok {
		return
	}
	if !c.Confirm("Delete this webhook?", "It receives nothing more, and its delivery log is removed.") {
		return
	}
	if err := c.Call("DELETE", webhooksAPI, c.AppQuery("id", strconv.FormatInt(id, 10)), nil, nil); err != nil {
		c.Done(webhookPath(c, id), "", err)
		return
	}
	c.Redirect(c.AppPath("webhooks"), "Webhook deleted.")
}

func (d *Dashboard) webhookRedeliver(c *Ctx) {
	id, _, ok := webhookID(c)
	if !ok {
		return
	}
	body := wire.WebhookActionRequest{Action: "redeliver", DeliveryID: strings.TrimSpace(c.R.PostFormValue("delivery_id"))}
	c.Done(webhookPath(c, id), "Delivery queued: it goes out within a few seconds.", c.Call("POST", webhooksAPI, c.AppQuery(), body, nil))
}
