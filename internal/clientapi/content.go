package clientapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/wire"
)

// Remote content routes (sdk-compat §1.12–§1.14, §1.16, §7.17).

// info: GET app/info.php → app block, branding and social links.
func (a *API) info(ctx context.Context, c *edge.Call) (any, error) {
	links, err := a.content.Links(ctx, c.App.ID)
	if err != nil {
		return nil, err
	}
	st := c.App.Settings
	maintMsg := ""
	if st.Maintenance {
		maintMsg = st.MaintenanceMessage
	}
	out := make([]wire.SocialLink, len(links))
	for i, l := range links {
		out[i] = wire.SocialLink{ID: l.ID, Platform: l.Platform, URL: l.URL, Label: l.Label}
	}
	return &wire.InfoReply{
		Success: true,
		App: wire.AppInfo{
			Name: c.App.Name, Version: c.App.Version, DownloadURL: st.DownloadURL,
			LoginMessage: st.LoginMessage, Message: st.LoginMessage,
			MaintenanceMode: st.Maintenance, MaintenanceMsg: maintMsg, Branding: wire.Branding(st.Branding),
		},
		SocialLinks: out,
	}, nil
}

// text: GET app/text.php[?name=] with the key in Authorization: Bearer or
// ?key=. An unknown or absent key gets the app defaults.
func (a *API) text(ctx context.Context, c *edge.Call) (any, error) {
	q := c.R.URL.Query()
	key := edge.BearerToken(c.R)
	if key == "" {
		key = q.Get("key")
	}
	texts, err := a.content.Texts(ctx, c.App.ID, strings.TrimSpace(key))
	if err != nil {
		return nil, err
	}
	if name := q.Get("name"); name != "" {
		one := map[string]string{}
		var value *string
		if v, ok := texts[name]; ok {
			one[name], value = v, &v
		}
		return &wire.TextReply{Success: true, Text: value, Texts: one}, nil
	}
	return &wire.TextsReply{Success: true, Texts: texts}, nil
}

// slides: POST app/slides.php (envelope) {"action":"get_slides"} or {}.
func (a *API) slides(ctx context.Context, c *edge.Call) (any, error) {
	action, err := c.F.Str("action")
	if err != nil {
		return nil, err
	}
	if action != "" && action != "get_slides" {
		return nil, apperr.InvalidField("action", "must be get_slides")
	}
	ss, err := a.content.LiveSlides(ctx, c.App.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Slide, len(ss))
	for i := range ss {
		out[i] = ss[i].Wire()
	}
	return &wire.SlidesReply{Success: true, Slides: out}, nil
}

// socialClick: POST app/social-click.php (envelope) {link_id} or {platform}.
func (a *API) socialClick(ctx context.Context, c *edge.Call) (any, error) {
	id, _, err := c.F.Int("link_id")
	if err != nil {
		return nil, err
	}
	platform, err := c.F.Str("platform")
	if err != nil {
		return nil, err
	}
	if err := a.content.Click(ctx, c.App.ID, id, strings.ToLower(strings.TrimSpace(platform))); err != nil {
		return nil, err
	}
	return &wire.Reply{Success: true, Message: "Click recorded."}, nil
}

// changelog: GET app/changelog.php?app_id=[&limit=&since=&category=]
// (public, plain): published entries, newest first.
func (a *API) changelog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	appID := strings.TrimSpace(q.Get("app_id"))
	if appID == "" {
		a.Error(w, r, apperr.Missing("app_id"))
		return
	}
	if _, err := a.liveApp(r.Context(), appID); err != nil {
		a.Error(w, r, err)
		return
	}
	cq := content.ChangelogQuery{AppID: appID, Since: q.Get("since"), Category: q.Get("category")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 50 {
			a.Error(w, r, apperr.InvalidField("limit", "must be 1 to 50"))
			return
		}
		cq.Limit = n
	}
	es, err := a.content.Changelog(r.Context(), cq)
	if err != nil {
		a.Error(w, r, err)
		return
	}
	out := make([]wire.ChangelogEntry, len(es))
	for i := range es {
		out[i] = es[i].Wire()
	}
	edge.WriteJSON(w, http.StatusOK, &wire.ChangelogReply{Success: true, Entries: out})
}
