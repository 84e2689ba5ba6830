package dashboard

import (
	"encoding/json"
	"github.com/keyward/keyward/wire"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// routesContent: texts, slides, app info and branding, social links, the changelog, pricing, orders and subscriptions.
func (d *Dashboard) routesContent(m *http.ServeMux) {
	d.page(m, "GET /dashboard/apps/{app}/content", func(c *Ctx) {
		http.Redirect(c.W, c.R, c.AppPath("content/texts"), http.StatusSeeOther)
	})

	d.page(m, "GET /dashboard/apps/{app}/content/texts", d.contentTexts)
	d.page(m, "POST /dashboard/apps/{app}/content/texts", d.contentTextSave)
	d.page(m, "POST /dashboard/apps/{app}/content/texts/delete", d.contentTextDelete)

	d.page(m, "GET /dashboard/apps/{app}/content/slides", d.contentSlides)
	d.page(m, "POST /dashboard/apps/{app}/content/slides", d.contentSlideSave)
	d.page(m, "POST /dashboard/apps/{app}/content/slides/{id}", d.contentSlideSave)
	d.page(m, "POST /dashboard/apps/{app}/content/slides/{id}/delete", d.contentDeleter("slides", "/api/admin/slides.php", "Delete this slide?", "The slide disappears from the app at once.", "Slide deleted."))

	d.page(m, "GET /dashboard/apps/{app}/content/info", d.contentInfo)
	d.page(m, "POST /dashboard/apps/{app}/content/info", d.contentInfoSave)

	d.page(m, "GET /dashboard/apps/{app}/content/links", d.contentLinks)
	d.page(m, "POST /dashboard/apps/{app}/content/links", d.contentLinkSave)
	d.page(m, "POST /dashboard/apps/{app}/content/links/{id}", d.contentLinkSave)
	d.page(m, "POST /dashboard/apps/{app}/content/links/{id}/delete", d.contentDeleter("links", "/api/admin/social-links.php", "Delete this social link?", "The link and its click count are removed.", "Link deleted."))

	d.page(m, "GET /dashboard/apps/{app}/content/changelog", d.contentChangelog)
	d.page(m, "POST /dashboard/apps/{app}/content/changelog", d.contentEntrySave)
	d.page(m, "POST /dashboard/apps/{app}/content/changelog/{id}", d.contentEntrySave)
	d.page(m, "POST /dashboard/apps/{app}/content/changelog/{id}/publish", d.contentEntryPublish(true))
	d.page(m, "POST /dashboard/apps/{app}/content/changelog/{id}/unpublish", d.contentEntryPublish(false))
	d.page(m, "POST /dashboard/apps/{app}/content/changelog/{id}/delete", d.contentDeleter("changelog", "/api/admin/changelog.php", "Delete this changelog entry?", "The entry is removed from the app's changelog for good.", "Entry deleted."))

	d.page(m, "GET /dashboard/apps/{app}/content/pricing", d.contentPricing)
	d.page(m, "POST /dashboard/apps/{app}/content/pricing", d.contentPlanSave)
	d.page(m, "POST /dashboard/apps/{app}/content/pricing/{id}", d.contentPlanSave)
	d.page(m, "POST /dashboard/apps/{app}/content/pricing/{id}/delete", d.contentDeleter("pricing", "/api/admin/pricing.php", "Delete this price?", "Customers can no longer buy it; orders already made keep their terms.", "Price deleted."))

	d.page(m, "GET /dashboard/apps/{app}/content/orders", d.contentOrders)
	d.page(m, "POST /dashboard/apps/{app}/content/orders/secret", d.contentOrderSecret)
	d.page(m, "POST /dashboard/apps/{app}/content/orders/{id}/approve", d.contentOrderAction("approve"))
	d.page(m, "POST /dashboard/apps/{app}/content/orders/{id}/refund", d.contentOrderAction("refund"))

	d.page(m, "GET /dashboard/apps/{app}/content/subscriptions", d.contentSubscriptions)
	d.page(m, "POST /dashboard/apps/{app}/content/subscriptions/{id}/cancel", d.contentSubscriptionCancel)
}

// contentSub is one entry of the Content sub-navigation.
type contentSub struct {
	Label, Href string
	Current     bool
}

var contentSections = []struct{ Slug, Label string }{
	{"texts", "Texts"}, {"slides", "Slides"}, {"info", "App info & branding"}, {"links", "Social links"},
	{"changelog", "Changelog"}, {"pricing", "Pricing"}, {"orders", "Orders"}, {"subscriptions", "Subscriptions"},
}

// contentRender renders the page content_<section> with the sub-navigation.
func (c *Ctx) contentRender(section, title string, data map[string]any) {
	var subs []contentSub
	for _, s := range contentSections {
		subs = append(subs, contentSub{Label: s.Label, Href: c.AppPath("content/" + s.Slug), Current: s.Slug == section})
	}
	data["Sub"] = subs
	data["Base"] = c.AppPath("content/" + section)
	c.Render("content_"+section, Page{Title: title, Nav: "content", Data: data})
}

// pathID reads the numeric {id} of the path.
func pathID(c *Ctx) (int64, error) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, badInput("Unknown record.")
	}
	return id, nil
}

// webLink reports whether s is an http(s) URL worth showing as a link.
func webLink(s string) bool {
	l := strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// formTime turns a form's time (RFC 3339, or a datetime-local value taken
// as UTC) into the API's ISO 8601; "" clears it.
func formTime(c *Ctx, name, label string) (string, error) {
	v := formStr(c, name)
	if v == "" {
		return "", nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC().Format(time.RFC3339), nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339), nil
		}
	}
	return "", badInput(label + ": enter a time such as 2027-01-01T00:00 (UTC).")
}

// inputTime shows an API time in a datetime-local field (UTC).
func inputTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04")
}

// contentDeleter is the confirmed DELETE of an app record addressed by {id}.
func (d *Dashboard) contentDeleter(section, api, question, message, done string) func(*Ctx) {
	return func(c *Ctx) {
		back := c.AppPath("content/" + section)
		id, err := pathID(c)
		if err != nil {
			c.Done(back, "", err)
			return
		}
		if !c.Confirm(question, message) {
			return
		}
		c.Done(back, done, c.Call("DELETE", api, c.AppQuery(), map[string]any{"app_id": c.AppID, "id": id}, nil))
	}
}

// ---- texts

type textRow struct {
	Name, Value string
	Overridden  bool
}

func sortedTexts(m map[string]string) []textRow {
	out := make([]textRow, 0, len(m))
	for k, v := range m {
		out = append(out, textRow{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (d *Dashboard) contentTexts(c *Ctx) {
	lk := strings.TrimSpace(c.R.URL.Query().Get("license_key"))
	var out wire.KeyTextsReply
	data := map[string]any{"LicenseKey": lk}
	err := c.Call("GET", "/api/admin/texts.php", c.AppQuery("license_key", lk), nil, &out)
	if ae, ok := err.(*APIError); ok && lk != "" && ae.Status == http.StatusNotFound {
		// An unknown key: show the defaults and say so.
		data["KeyError"] = ae.Message
		err = c.Call("GET", "/api/admin/texts.php", c.AppQuery(), nil, &out)
		lk, data["LicenseKey"] = "", lk
	}
	if err != nil {
		c.Fail(err)
		return
	}
	data["Texts"] = sortedTexts(out.Texts)
	if lk != "" {
		ov := sortedTexts(out.Overrides)
		data["Overrides"] = ov
		data["HasKey"] = true
	}
	c.contentRender("texts", "Texts", data)
}

func textsBack(c *Ctx, lk string) string {
	if lk != "" {
		return c.AppPath("content/texts") + queryOf("license_key", lk)
	}
	return c.AppPath("content/texts")
}

func (d *Dashboard) contentTextSave(c *Ctx) {
	lk, name := formStr(c, "license_key"), formStr(c, "name")
	body := map[string]any{"app_id": c.AppID, "name": name, "value": c.R.PostFormValue("value")}
	if lk != "" {
		body["license_key"] = lk
	}
	msg := "Text " + name + " saved."
	if lk != "" {
		msg = "Text " + name + " saved for this key."
	}
	c.Done(textsBack(c, lk), msg, c.Call("PUT", "/api/admin/texts.php", c.AppQuery(), body, nil))
}

func (d *Dashboard) contentTextDelete(c *Ctx) {
	lk, name := formStr(c, "license_key"), formStr(c, "name")
	q, m := "Delete the text "+name+"?", "The app falls back to its built-in text."
	if lk != "" {
		q, m = "Remove this key's text "+name+"?", "The key gets the app's default text again."
	}
	if !c.Confirm(q, m) {
		return
	}
	body := map[string]any{"app_id": c.AppID, "name": name}
	if lk != "" {
		body["license_key"] = lk
	}
	c.Done(textsBack(c, lk), "Text deleted.", c.Call("DELETE", "/api/admin/texts.php", c.AppQuery(), body, nil))
}

// ---- slides

// slideRow is a slide as the slides page shows it: whether its links are
// web links, and its window as datetime-local input values.
type slideRow struct {
	wire.AdminSlide
	ImageOK, LinkOK        bool
	StartsInput, EndsInput string
}

func (d *Dashboard) contentSlides(c *Ctx) {
	var out wire.SlideListReply
	if err := c.Call("GET", "/api/admin/slides.php", c.AppQuery(), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	rows := make([]slideRow, len(out.Slides))
	for i, s := range out.Slides {
		rows[i] = slideRow{AdminSlide: s, ImageOK: webLink(s.ImageURL), LinkOK: webLink(s.LinkURL),
			StartsInput: inputTime(s.StartsAt), EndsInput: inputTime(s.EndsAt)}
	}
	c.contentRender("slides", "Slides", map[string]any{"Slides": rows})
}

func (d *Dashboard) contentSlideSave(c *Ctx) {
	back := c.AppPath("content/slides")
	body := map[string]any{"app_id": c.AppID, "title": formStr(c, "title"), "body": c.R.PostFormValue("body"),
		"image_url": formStr(c, "image_url"), "link_url": formStr(c, "link_url"), "active": formBool(c, "active")}
	order, ok, err := formInt(c, "order", "Order")
	if err != nil {
		c.Done(back, "", err)
		return
	}
	if ok {
		body["order"] = order
	}
	for name, label := range map[string]string{"starts_at": "Shown from", "ends_at": "Shown until"} {
		t, err := formTime(c, name, label)
		if err != nil {
			c.Done(back, "", err)
			return
		}
		body[name] = t
	}
	if c.R.PathValue("id") == "" {
		c.Done(back, "Slide created.", c.Call("POST", "/api/admin/slides.php", c.AppQuery(), body, nil))
		return
	}
	id, err := pathID(c)
	if err == nil {
		body["id"] = id
		err = c.Call("PUT", "/api/admin/slides.php", c.AppQuery(), body, nil)
	}
	c.Done(back, "Slide saved.", err)
}

// ---- app info and branding

var brandingFields = []struct{ Name, Label, Help string }{
	{"logo_url", "Logo URL", "An http(s) address of the logo image."},
	{"website_url", "Website URL", "An http(s) address."},
	{"support_email", "Support e-mail", ""},
	{"primary_color", "Primary colour", "#RRGGBB, e.g. #1f6feb."},
	{"accent_color", "Accent colour", "#RRGGBB."},
}

var priceRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

var colorOK = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)

func (d *Dashboard) contentInfo(c *Ctx) {
	settings := settingsMap(c.App.Settings)
	branding, _ := settings["branding"].(map[string]any)
	type field struct {
		Name, Label, Help, Value string
		Color                    bool
	}
	var fields []field
	for _, f := range brandingFields {
		v := str(branding[f.Name])
		fields = append(fields, field{Name: f.Name, Label: f.Label, Help: f.Help, Value: v, Color: colorOK.MatchString(v)})
	}
	c.contentRender("info", "App info & branding", map[string]any{
		"Name": c.App.Name, "Version": c.App.Version,
		"DownloadURL": str(settings["download_url"]), "LoginMessage": str(settings["login_message"]),
		"Branding": fields, "LogoOK": webLink(str(branding["logo_url"])), "Logo": str(branding["logo_url"]),
		"WebsiteOK": webLink(str(branding["website_url"])), "Website": str(branding["website_url"]), "LinksHref": c.AppPath("content/links"),
	})
}

func (d *Dashboard) contentInfoSave(c *Ctx) {
	branding := map[string]string{}
	for _, f := range brandingFields {
		branding[f.Name] = formStr(c, f.Name)
	}
	settings := map[string]any{"download_url": formStr(c, "download_url"), "login_message": c.R.PostFormValue("login_message"), "branding": branding}
	body := map[string]any{"name": formStr(c, "name"), "version": formStr(c, "version"), "settings": settings}
	c.Done(c.AppPath("content/info"), "App info saved.", c.Call("PUT", "/api/admin/apps.php", c.AppQuery(), body, nil))
}

// ---- social links

func (d *Dashboard) contentLinks(c *Ctx) {
	var out wire.SocialLinkListReply
	if err := c.Call("GET", "/api/admin/social-links.php", c.AppQuery(), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	var total int64
	rows := make([]linkRow, len(out.SocialLinks))
	for i, l := range out.SocialLinks {
		rows[i] = linkRow{AdminSocialLink: l, URLOK: webLink(l.URL)}
		total += l.Clicks
	}
	c.contentRender("links", "Social links", map[string]any{"Links": rows, "Clicks": total})
}

// linkRow is a social link as its page lists it: URLOK says whether its URL
// may be shown as a link.
type linkRow struct {
	wire.AdminSocialLink
	URLOK bool
}

func (d *Dashboard) contentLinkSave(c *Ctx) {
	back := c.AppPath("content/links")
	body := map[string]any{"app_id": c.AppID, "platform": strings.ToLower(formStr(c, "platform")), "url": formStr(c, "url"), "label": formStr(c, "label")}
	order, ok, err := formInt(c, "order", "Order")
	if err != nil {
		c.Done(back, "", err)
		return
	}
	if ok {
		body["order"] = order
	}
	if c.R.PathValue("id") == "" {
		if body["platform"] == "" || body["url"] == "" {
			c.Done(back, "", badInput("Enter the platform and the URL."))
			return
		}
		c.Done(back, "Link created.", c.Call("POST", "/api/admin/social-links.php", c.AppQuery(), body, nil))
		return
	}
	id, err := pathID(c)
	if err == nil {
		body["id"] = id
		err = c.Call("PUT", "/api/admin/social-links.php", c.AppQuery(), body, nil)
	}
	c.Done(back, "Link saved.", err)
}

// ---- changelog

var changelogCategories = []string{"new", "improved", "fixed", "removed", "security", "deprecated"}

func (d *Dashboard) contentChangelog(c *Ctx) {
	var out wire.ChangelogEntryListReply
	if err := c.Call("GET", "/api/admin/changelog.php", c.AppQuery(), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	drafts := 0
	for _, e := range out.Entries {
		if !e.Published {
			drafts++
		}
	}
	c.contentRender("changelog", "Changelog", map[string]any{"Entries": out.Entries, "Drafts": drafts, "Categories": changelogCategories})
}

func (d *Dashboard) contentEntrySave(c *Ctx) {
	back := c.AppPath("content/changelog")
	body := map[string]any{"app_id": c.AppID, "version": formStr(c, "version"), "title": formStr(c, "title"),
		"body": c.R.PostFormValue("body"), "category": formStr(c, "category")}
	if c.R.PathValue("id") == "" {
		body["published"] = formBool(c, "publish")
		msg := "Draft saved: it is not shown to the app until you publish it."
		if body["published"] == true {
			msg = "Entry published."
		}
		c.Done(back, msg, c.Call("POST", "/api/admin/changelog.php", c.AppQuery(), body, nil))
		return
	}
	id, err := pathID(c)
	if err == nil {
		body["id"] = id
		err = c.Call("PUT", "/api/admin/changelog.php", c.AppQuery(), body, nil)
	}
	c.Done(back, "Entry saved.", err)
}

func (d *Dashboard) contentEntryPublish(publish bool) func(*Ctx) {
	return func(c *Ctx) {
		back := c.AppPath("content/changelog")
		id, err := pathID(c)
		if err == nil {
			err = c.Call("PUT", "/api/admin/changelog.php", c.AppQuery(), map[string]any{"app_id": c.AppID, "id": id, "published": publish}, nil)
		}
		msg := "Entry published."
		if !publish {
			msg = "Entry unpublished: it is a draft again."
		}
		c.Done(back, msg, err)
	}
}

// ---- pricing

// planRow is a price as the pricing page shows it: its price with two
// decimals and its features as compact JSON ("{}" when none).
type planRow struct {
	wire.AdminPlan
	PriceText, FeaturesText string
}

func (d *Dashboard) contentPricing(c *Ctx) {
	var out wire.PlanListReply
	if err := c.Call("GET", "/api/admin/pricing.php", c.AppQuery(), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	rows := func(ps []wire.AdminPlan) []planRow {
		out := make([]planRow, len(ps))
		for i, p := range ps {
			f := "{}"
			var v any
			if json.Unmarshal(p.Features, &v) == nil && v != nil {
				if b, err := json.Marshal(v); err == nil {
					f = string(b)
				}
			}
			out[i] = planRow{AdminPlan: p, FeaturesText: f, PriceText: strconv.FormatFloat(p.Price, 'f', 2, 64)}
		}
		return out
	}
	type group struct {
		Kind, Title string
		Items       []planRow
	}
	c.contentRender("pricing", "Pricing", map[string]any{"Groups": []group{{"levels", "Subscription levels", rows(out.Levels)}, {"plans", "Plans", rows(out.Plans)}}})
}

func (d *Dashboard) contentPlanSave(c *Ctx) {
	back := c.AppPath("content/pricing")
	creating := c.R.PathValue("id") == ""
	body := map[string]any{"app_id": c.AppID, "name": formStr(c, "name"), "description": c.R.PostFormValue("description"),
		"currency": strings.ToUpper(formStr(c, "currency")), "interval": formStr(c, "interval"), "key_type": formStr(c, "key_type"),
		"active": formBool(c, "active")}
	if creating {
		body["type"] = formStr(c, "type")
	}
	price := formStr(c, "price")
	if !priceRE.MatchString(price) {
		c.Done(back, "", badInput("Price: enter an amount such as 9.99."))
		return
	}
	body["price"] = json.Number(price)
	for _, f := range []struct{ Name, Label string }{{"duration", "Duration (days)"}, {"max_devices", "Devices per key"}, {"order", "Order"}} {
		n, ok, err := formInt(c, f.Name, f.Label)
		if err != nil {
			c.Done(back, "", err)
			return
		}
		if ok {
			body[f.Name] = n
		}
	}
	if body["key_type"] == "lifetime" {
		body["duration"] = 0
	}
	if feats := formStr(c, "features"); feats != "" {
		var m map[string]any
		if json.Unmarshal([]byte(feats), &m) != nil || m == nil {
			c.Done(back, "", badInput(`Features: enter a JSON object such as {"pro": true}, or leave it empty.`))
			return
		}
		body["features"] = json.RawMessage(feats)
	} else {
		body["features"] = map[string]any{}
	}
	if creating {
		c.Done(back, "Price created.", c.Call("POST", "/api/admin/pricing.php", c.AppQuery(), body, nil))
		return
	}
	id, err := pathID(c)
	if err == nil {
		body["id"] = id
		err = c.Call("PUT", "/api/admin/pricing.php", c.AppQuery(), body, nil)
	}
	c.Done(back, "Price saved.", err)
}

// ---- orders

func (d *Dashboard) contentOrders(c *Ctx) {
	d.renderOrders(c, "")
}

// orderLimits are the choices of the orders page's Show select: how many of
// the newest orders it lists (the API answers at most 1000).
var orderLimits = []string{"100", "500", "1000"}

// renderOrders lists the newest orders, as many as the limit query chooses
// (100 unless given; another value is refused on the page, which then shows
// the newest 100).
func (d *Dashboard) renderOrders(c *Ctx, secret string) {
	limit, msg := strings.TrimSpace(c.R.URL.Query().Get("limit")), ""
	if limit == "" {
		limit = orderLimits[0]
	} else if !slices.Contains(orderLimits, limit) {
		limit, msg = orderLimits[0], "Show: choose 100, 500 or 1000 orders; the newest 100 are shown."
	}
	var out wire.OrderListReply
	if err := c.Call("GET", "/api/admin/orders.php", c.AppQuery("limit", limit), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	c.contentRender("orders", "Orders", map[string]any{"Orders": out.Orders, "Secret": secret, "Limit": limit, "Limits": orderLimits, "Error": msg})
}

func (d *Dashboard) contentOrderAction(action string) func(*Ctx) {
	return func(c *Ctx) {
		back := c.AppPath("content/orders")
		id := c.R.PathValue("id")
		body := map[string]any{"app_id": c.AppID, "order_id": id}
		msg := "Order " + id + " approved: its key was delivered."
		if action == "refund" {
			if !c.Confirm("Refund order "+id+"?", "The order is marked refunded and the key it delivered is banned.") {
				return
			}
			body["reason"] = formStr(c, "reason")
			msg = "Order " + id + " refunded."
		} else {
			body["payment_ref"] = formStr(c, "payment_ref")
		}
		c.Done(back, msg, c.Call("POST", "/api/admin/orders.php", c.AppQuery("action", action), body, nil))
	}
}

func (d *Dashboard) contentOrderSecret(c *Ctx) {
	if !c.Confirm("Make a new fulfilment secret?", "Your payment integration must use the new secret: the current one stops working.") {
		return
	}
	var out wire.FulfillmentSecretReply
	if err := c.Call("POST", "/api/admin/orders.php", c.AppQuery("action", "fulfillment-secret"), map[string]any{"app_id": c.AppID}, &out); err != nil {
		c.Done(c.AppPath("content/orders"), "", err)
		return
	}
	d.renderOrders(c, out.FulfillmentSecret)
}

// ---- subscriptions

func (d *Dashboard) contentSubscriptions(c *Ctx) {
	var out wire.SubscriptionListReply
	if err := c.Call("GET", "/api/admin/subscriptions.php", c.AppQuery(), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	c.contentRender("subscriptions", "Subscriptions", map[string]any{"Subs": out.Subscriptions})
}

func (d *Dashboard) contentSubscriptionCancel(c *Ctx) {
	back := c.AppPath("content/subscriptions")
	id, err := pathID(c)
	if err != nil {
		c.Done(back, "", err)
		return
	}
	if !c.Confirm("Cancel this subscription?", "It is not renewed any more; its key runs until the paid period ends.") {
		return
	}
	c.Done(back, "Subscription cancelled.", c.Call("POST", "/api/admin/subscriptions.php", c.AppQuery("action", "cancel"),
		map[string]any{"app_id": c.AppID, "id": id}, nil))
}
