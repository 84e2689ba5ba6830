package adminapi

import (
	"context"
	"time"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Admin API of remote content: texts, slides, social links, changelog.
// PUT edits change only the fields present in the body.

// existingApp is the app the request is about, which bearer has checked
// exists and that the caller may act on.
func (a *API) existingApp(_ context.Context, c *adminCall) (string, error) {
	if c.appID == "" {
		return "", apperr.Missing("app_id")
	}
	return c.appID, nil
}

// appRecord reads app_id (the app must exist) and the id of the record a
// PUT or DELETE is about.
func (a *API) appRecord(ctx context.Context, c *adminCall) (string, int64, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return "", 0, err
	}
	id, err := recordID(c)
	return appID, id, err
}

// deleter is the DELETE handler of an app's records addressed by id.
func (a *API) deleter(del func(context.Context, audit.Actor, string, int64) error, what string) adminHandler {
	return func(ctx context.Context, c *adminCall) (any, error) {
		appID, id, err := a.appRecord(ctx, c)
		if err != nil {
			return nil, err
		}
		if err := del(ctx, c.actor, appID, id); err != nil {
			return nil, err
		}
		return wire.MessageReply{Success: true, Message: what + " deleted."}, nil
	}
}

// recordID reads the id of the record a PUT or DELETE is about.
func recordID(c *adminCall) (int64, error) {
	id, ok, err := c.f.Int("id")
	if err == nil && !ok {
		if id, err = queryInt(c, "id"); err == nil && id == 0 {
			err = apperr.Missing("id")
		}
	}
	return id, err
}

// timeField reads an optional ISO 8601 time; JSON null or "" clear it.
func timeField(f edge.Fields, name string) (*time.Time, bool, error) {
	if _, ok := f[name]; !ok {
		return nil, false, nil
	}
	s, err := f.Str(name)
	if err != nil || s == "" {
		return nil, true, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, true, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid field "+name+": must be an ISO 8601 time such as 2027-01-01T00:00:00Z.")
	}
	t = t.UTC()
	return &t, true, nil
}

// setStr, setInt and setBool copy a body field into dst when it is present.
func setStr(f edge.Fields, name string, dst *string) error {
	if _, ok := f[name]; !ok {
		return nil
	}
	v, err := f.Str(name)
	*dst = v
	return err
}

func setInt(f edge.Fields, name string, dst *int) error {
	v, ok, err := f.Int(name)
	if ok && err == nil {
		if v < -1_000_000 || v > 1_000_000 {
			return apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid field "+name+": must be -1000000 to 1000000.")
		}
		*dst = int(v)
	}
	return err
}

func setBool(f edge.Fields, name string, dst *bool) error {
	v, ok, err := f.Bool(name)
	if ok && err == nil {
		*dst = v
	}
	return err
}

// ---- texts.php

// getTexts: GET texts.php?app_id=[&license_key=] → {texts[, overrides]}.
func (a *API) getTexts(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	lk := c.q.Get("license_key")
	defaults, overrides, err := a.content.AdminTexts(ctx, appID, lk)
	if err != nil {
		return nil, err
	}
	if lk != "" {
		return wire.KeyTextsReply{Success: true, Texts: defaults, Overrides: overrides}, nil
	}
	return wire.TextsReply{Success: true, Texts: defaults}, nil
}

// putText: PUT texts.php {app_id, name, value, license_key?}.
func (a *API) putText(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	name, err := c.required("name")
	if err != nil {
		return nil, err
	}
	value, err := c.f.Str("value")
	if err != nil {
		return nil, err
	}
	lk, err := c.f.Key("license_key")
	if err != nil {
		return nil, err
	}
	if err := a.content.SetText(ctx, c.actor, appID, lk, name, value); err != nil {
		return nil, err
	}
	return wire.AdminTextReply{Success: true, Name: name, Value: value}, nil
}

// deleteText: DELETE texts.php {app_id, name, license_key?}.
func (a *API) deleteText(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	name, err := c.required("name")
	if err != nil {
		return nil, err
	}
	lk, err := c.f.Key("license_key")
	if err != nil {
		return nil, err
	}
	if err := a.content.DeleteText(ctx, c.actor, appID, lk, name); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Text deleted."}, nil
}

// ---- slides.php

// slideFields applies the slide fields present in the body to sl.
func slideFields(f edge.Fields, sl *content.Slide) error {
	for name, dst := range map[string]*string{"title": &sl.Title, "body": &sl.Body, "image_url": &sl.ImageURL, "link_url": &sl.LinkURL} {
		if err := setStr(f, name, dst); err != nil {
			return err
		}
	}
	if err := setInt(f, "order", &sl.Position); err != nil {
		return err
	}
	if err := setBool(f, "active", &sl.Active); err != nil {
		return err
	}
	for name, dst := range map[string]**time.Time{"starts_at": &sl.StartsAt, "ends_at": &sl.EndsAt} {
		t, ok, err := timeField(f, name)
		if err != nil {
			return err
		}
		if ok {
			*dst = t
		}
	}
	return nil
}

func (a *API) listSlides(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	ss, err := a.content.Slides(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.AdminSlide, len(ss))
	for i := range ss {
		out[i] = ss[i].AdminWire()
	}
	return wire.SlideListReply{Success: true, Slides: out}, nil
}

func (a *API) createSlide(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	sl := &content.Slide{AppID: appID, Active: true}
	if err := slideFields(c.f, sl); err != nil {
		return nil, err
	}
	if err := a.content.CreateSlide(ctx, c.actor, sl); err != nil {
		return nil, err
	}
	return wire.SlideReply{Success: true, Slide: sl.AdminWire()}, nil
}

func (a *API) updateSlide(ctx context.Context, c *adminCall) (any, error) {
	appID, id, err := a.appRecord(ctx, c)
	if err != nil {
		return nil, err
	}
	sl, err := a.content.UpdateSlide(ctx, c.actor, appID, id, func(sl *content.Slide) error { return slideFields(c.f, sl) })
	if err != nil {
		return nil, err
	}
	return wire.SlideReply{Success: true, Slide: sl.AdminWire()}, nil
}

// ---- social-links.php

func linkView(l *content.Link) wire.AdminSocialLink {
	return wire.AdminSocialLink{ID: l.ID, Platform: l.Platform, URL: l.URL, Label: l.Label, Order: l.Position,
		Clicks: l.Clicks, CreatedAt: license.Timestamp(l.CreatedAt), UpdatedAt: license.Timestamp(l.UpdatedAt)}
}

func linkFields(f edge.Fields, l *content.Link) error {
	for name, dst := range map[string]*string{"platform": &l.Platform, "url": &l.URL, "label": &l.Label} {
		if err := setStr(f, name, dst); err != nil {
			return err
		}
	}
	return setInt(f, "order", &l.Position)
}

func (a *API) listLinks(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	ls, err := a.content.Links(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.AdminSocialLink, len(ls))
	for i := range ls {
		out[i] = linkView(&ls[i])
	}
	return wire.SocialLinkListReply{Success: true, SocialLinks: out}, nil
}

func (a *API) createLink(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	l := &content.Link{AppID: appID}
	if err := linkFields(c.f, l); err != nil {
		return nil, err
	}
	if err := a.content.CreateLink(ctx, c.actor, l); err != nil {
		return nil, err
	}
	return wire.SocialLinkReply{Success: true, SocialLink: linkView(l)}, nil
}

func (a *API) updateLink(ctx context.Context, c *adminCall) (any, error) {
	appID, id, err := a.appRecord(ctx, c)
	if err != nil {
		return nil, err
	}
	l, err := a.content.UpdateLink(ctx, c.actor, appID, id, func(l *content.Link) error { return linkFields(c.f, l) })
	if err != nil {
		return nil, err
	}
	return wire.SocialLinkReply{Success: true, SocialLink: linkView(l)}, nil
}

// ---- changelog.php (admin)

func entryFields(f edge.Fields, e *content.Entry) error {
	for name, dst := range map[string]*string{"version": &e.Version, "title": &e.Title, "body": &e.Body, "category": &e.Category} {
		if err := setStr(f, name, dst); err != nil {
			return err
		}
	}
	return nil
}

func (a *API) listEntries(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	es, err := a.content.Entries(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.AdminChangelogEntry, len(es))
	for i := range es {
		out[i] = es[i].AdminWire()
	}
	return wire.ChangelogEntryListReply{Success: true, Entries: out}, nil
}

func (a *API) createEntry(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	e := &content.Entry{AppID: appID}
	if err := entryFields(c.f, e); err != nil {
		return nil, err
	}
	publish, _, err := c.f.Bool("published")
	if err != nil {
		return nil, err
	}
	if err := a.content.CreateEntry(ctx, c.actor, e, publish); err != nil {
		return nil, err
	}
	return wire.ChangelogEntryReply{Success: true, Entry: e.AdminWire()}, nil
}

func (a *API) updateEntry(ctx context.Context, c *adminCall) (any, error) {
	appID, id, err := a.appRecord(ctx, c)
	if err != nil {
		return nil, err
	}
	var publish *bool
	if v, ok, err := c.f.Bool("published"); err != nil {
		return nil, err
	} else if ok {
		publish = &v
	}
	e, err := a.content.UpdateEntry(ctx, c.actor, appID, id, func(e *content.Entry) error { return entryFields(c.f, e) }, publish)
	if err != nil {
		return nil, err
	}
	return wire.ChangelogEntryReply{Success: true, Entry: e.AdminWire()}, nil
}

// ---- feature-flags.php

// listFlags: GET feature-flags.php?app_id= → {feature_flags:[{name, type, default, description}]}.
func (a *API) listFlags(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	app, err := a.lic.App(ctx, appID)
	if err != nil {
		return nil, err
	}
	return wire.FeatureFlagListReply{Success: true, FeatureFlags: app.Settings.FeatureFlags}, nil
}

// putFlag: PUT feature-flags.php {app_id, name, type, default?, description?}
// defines or redefines a flag.
func (a *API) putFlag(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	var f license.FeatureFlag
	if f.Name, err = c.required("name"); err != nil {
		return nil, err
	}
	if f.Type, err = c.f.Str("type"); err != nil {
		return nil, err
	}
	if f.Description, err = c.f.Str("description"); err != nil {
		return nil, err
	}
	f.Default = c.f["default"]
	app, err := a.lic.SetFlag(ctx, c.actor, appID, f)
	if err != nil {
		return nil, err
	}
	for _, def := range app.Settings.FeatureFlags {
		if def.Name == f.Name {
			v := wire.FeatureFlag(def)
			return wire.FeatureFlagReply{Success: true, FeatureFlag: &v}, nil
		}
	}
	return wire.FeatureFlagReply{Success: true}, nil
}

// deleteFlag: DELETE feature-flags.php {app_id, name}.
func (a *API) deleteFlag(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	name, err := c.required("name")
	if err != nil {
		return nil, err
	}
	if _, err := a.lic.DeleteFlag(ctx, c.actor, appID, name); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Flag deleted."}, nil
}
