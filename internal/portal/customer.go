package portal

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/customer"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Customer self-service (/api/customer/*.php but reset-hwid.php): a
// vendor's customer portal signs the customer in with app_id and a license
// key or account, never the app secret, and calls the other routes with the
// customer token as a bearer token. Plain JSON both ways.

// customerCall is one authenticated customer request.
type customerCall struct {
	p  *customer.Principal
	f  edge.Fields
	q  url.Values
	ip string
}

type customerHandler func(ctx context.Context, c *customerCall) (any, error)

// customerMethods routes one customer path by HTTP method.
type customerMethods map[string]customerHandler

func (m customerMethods) list() []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// customerRoute registers a bearer customer route, one method pattern per
// method (a method it does not list gets the edge's 405).
func customerRoute(a *API, path string, m customerMethods) []edge.Route {
	var rs []edge.Route
	for _, method := range m.list() {
		h := m[method]
		rs = append(rs, edge.Route{Pattern: method + " " + path, Auth: edge.CustomerToken, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, err := a.customer.Authenticate(r.Context(), edge.BearerToken(r))
			if err != nil {
				a.Error(w, r, err)
				return
			}
			f, ok := a.PlainBody(w, r)
			if !ok {
				return
			}
			res, err := h(r.Context(), &customerCall{p: p, f: f, q: r.URL.Query(), ip: a.ClientIP(r)})
			if err != nil {
				a.Error(w, r, err)
				return
			}
			edge.WriteJSON(w, http.StatusOK, res)
		})})
	}
	return rs
}

// param reads a string from the query string or, failing that, the body.
func (c *customerCall) param(name string) (string, error) {
	if v := c.q.Get(name); v != "" {
		return v, nil
	}
	return c.f.Str(name)
}

// customerLogin: POST /api/customer/login.php {app_id, license_key} or
// {app_id, username, password} → {token, expires_at, kind}.
func (a *API) customerLogin(w http.ResponseWriter, r *http.Request) {
	body, err := edge.ReadBody(w, r, edge.ClientBodyLimit)
	if err != nil {
		a.Error(w, r, err)
		return
	}
	res, err := a.customerSignIn(r, body)
	if err != nil {
		a.Error(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, res)
}

func (a *API) customerSignIn(r *http.Request, body []byte) (*wire.CustomerLoginReply, error) {
	f, err := edge.ParseFields(body)
	if err != nil {
		return nil, err
	}
	in := customer.LoginInput{IP: a.ClientIP(r)}
	if in.AppID, err = f.Key("app_id"); err != nil {
		return nil, err
	}
	if in.LicenseKey, err = f.Key("license_key", "key"); err != nil {
		return nil, err
	}
	if in.Username, err = f.Key("username"); err != nil {
		return nil, err
	}
	if in.Password, err = f.Str("password"); err != nil {
		return nil, err
	}
	tok, err := a.customer.Login(r.Context(), in)
	if err != nil {
		return nil, err
	}
	return &wire.CustomerLoginReply{Success: true, Token: tok.Token, TokenType: "Bearer", Kind: tok.Kind,
		ExpiresAt: license.Timestamp(tok.ExpiresAt)}, nil
}

// customerKey: GET key.php → the customer's key or account, devices and
// live sessions.
func (a *API) customerKey(ctx context.Context, c *customerCall) (any, error) {
	v, err := a.customer.View(ctx, c.p)
	if err != nil {
		return nil, err
	}
	now := a.now()
	devices := make([]wire.Device, 0, len(v.Devices))
	for _, d := range v.Devices {
		devices = append(devices, wire.Device{HWID: d.HWID, FirstSeenAt: license.Timestamp(d.CreatedAt),
			LastSeenAt: license.Timestamp(d.LastSeenAt)})
	}
	sessions := make([]wire.CustomerSession, 0, len(v.Sessions))
	for _, s := range v.Sessions {
		sessions = append(sessions, wire.CustomerSession{SessionID: s.ID, HWID: s.HWID, IP: s.IP,
			StartedAt: license.Timestamp(s.CreatedAt), LastHeartbeatAt: license.Timestamp(s.LastSeenAt)})
	}
	res := &wire.CustomerKeyReply{Success: true, Kind: c.p.Kind, AppID: c.p.App.ID, AppName: c.p.App.Name,
		Devices: devices, Sessions: sessions, TokenExpiresAt: license.Timestamp(c.p.Expires)}
	if c.p.Kind == customer.KindKey {
		k := c.p.Key
		res.Key = &wire.CustomerKey{LicenseKey: k.LicenseKey, Status: string(k.StatusAt(now)), KeyType: string(k.Type),
			Duration: k.Duration, ActivatedAt: license.OptTimestamp(k.ActivatedAt), ExpiresAt: license.OptTimestamp(k.ExpiresAt),
			DaysRemaining: k.DaysRemaining(now), MaxDevices: k.MaxDevices, Floating: k.Floating,
			Features: c.p.App.Features(k.FeaturesJSON())}
		if err := a.keySeatsAndFiles(ctx, c, res, now); err != nil {
			return nil, err
		}
		return res, nil
	}
	acc := c.p.Account
	res.Account = &wire.CustomerAccount{Username: acc.Username, Email: acc.Email, Status: string(acc.StatusAt(now)),
		Lifetime: acc.Lifetime(), ExpiresAt: license.OptTimestamp(acc.ExpiresAt), DaysRemaining: acc.DaysRemaining(now),
		MaxDevices: acc.MaxDevices, Features: c.p.App.Features(acc.FeaturesJSON()), RedeemedKeys: v.Keys,
		CreatedAt: license.Timestamp(acc.CreatedAt)}
	return res, nil
}

// keySeatsAndFiles adds to res the license files of the token's key and,
// for a floating key, its seats: the admin key detail's own reads
// (license.Service GetKey and LicenseFiles, license.KeyDetail.SeatHolders)
// of the key the token was just checked to hold (Authenticate read it by
// app, string and id), so the customer sees the seats a login counts.
func (a *API) keySeatsAndFiles(ctx context.Context, c *customerCall, res *wire.CustomerKeyReply, now time.Time) error {
	d, err := a.lic.GetKey(ctx, c.p.App.ID, c.p.Key.LicenseKey)
	if err != nil {
		return err
	}
	if d.Key.ID != c.p.Key.ID {
		return apperr.NotFoundOf("Key") // rotated or replaced since Authenticate
	}
	files, err := a.lic.LicenseFiles(ctx, c.p.App.ID, d.Key.ID)
	if err != nil {
		return err
	}
	res.LicenseFiles = make([]wire.LicenseFile, 0, len(files))
	for i := range files {
		res.LicenseFiles = append(res.LicenseFiles, files[i].View())
	}
	if !d.Key.Floating {
		return nil
	}
	holders := d.SeatHolders(files, now)
	seats := &wire.CustomerSeats{SeatsInUse: len(holders), MaxDevices: d.Key.MaxDevices,
		Machines: make([]wire.CustomerSeat, 0, len(holders))}
	for _, h := range holders {
		m := wire.CustomerSeat{HWID: h.HWID, Borrowed: h.File != nil}
		if ss := h.Session; ss != nil {
			m.Since, m.LastHeartbeatAt, m.SessionID = license.Timestamp(ss.CreatedAt), license.OptTimestamp(&ss.LastSeenAt), &ss.ID
		}
		if f := h.File; f != nil {
			if h.Session == nil {
				m.Since = license.Timestamp(f.IssuedAt)
			}
			m.FileID, m.ValidUntil = &f.ID, license.OptTimestamp(&f.ValidUntil)
		}
		seats.Machines = append(seats.Machines, m)
	}
	res.Seats = seats
	return nil
}

// customerReturnFile: POST license-files.php {id, action: "return"} returns
// a license file the token's key borrowed (a floating key's seat held by a
// machine offline): its seat frees at once (license.Service ReturnKeyFile,
// audited as license_file.return by the customer). A file of another key,
// an unknown id, a file that is no borrow, or an account sign-in is
// NOT_FOUND. The returned file stays valid offline until its valid_until;
// only the seat count forgets it.
func (a *API) customerReturnFile(ctx context.Context, c *customerCall) (any, error) {
	action, err := c.param("action")
	if err != nil {
		return nil, err
	}
	if action != "return" {
		return nil, apperr.InvalidField("action", `must be "return"`)
	}
	id, err := c.param("id")
	if err != nil {
		return nil, err
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, apperr.Missing("id")
	}
	var keyID int64 // an account holds no file it may return
	if c.p.Kind == customer.KindKey {
		keyID = c.p.Key.ID
	}
	f, err := a.lic.ReturnKeyFile(ctx, c.p.App, keyID, id, c.p.Actor(c.ip))
	if err != nil {
		return nil, err
	}
	return &wire.CustomerLicenseFileReply{Success: true, Message: "License file returned; its seat is free.", File: f.View()}, nil
}

// customerEndSession: DELETE or POST sessions.php {session_id} ends one of
// the customer's own live sessions.
func (a *API) customerEndSession(ctx context.Context, c *customerCall) (any, error) {
	id, err := c.param("session_id")
	if err != nil {
		return nil, err
	}
	if err := a.customer.EndSession(ctx, c.p, c.ip, id); err != nil {
		return nil, err
	}
	return &wire.MessageReply{Success: true, Message: "Session ended."}, nil
}

// customerOrders: GET orders.php → the customer's orders, newest first.
func (a *API) customerOrders(ctx context.Context, c *customerCall) (any, error) {
	orders, err := a.customer.Orders(ctx, c.p)
	if err != nil {
		return nil, err
	}
	out := make([]wire.CustomerOrder, 0, len(orders))
	for _, o := range orders {
		out = append(out, wire.CustomerOrder{OrderID: o.ID, Plan: o.PlanName, Kind: o.Kind, Status: o.Status,
			AmountCents: o.AmountCents, Currency: o.Currency, LicenseKeys: o.Keys, SubscriptionID: o.SubscriptionID,
			CreatedAt: license.Timestamp(o.CreatedAt), FulfilledAt: license.OptTimestamp(o.FulfilledAt)})
	}
	return &wire.CustomerOrdersReply{Success: true, Orders: out}, nil
}

func customerSubView(s *commerce.Subscription) wire.CustomerSubscription {
	return wire.CustomerSubscription{ID: s.ID, Plan: s.PlanName, Period: s.Period, PeriodDays: s.PeriodDays,
		AmountCents: s.AmountCents, Currency: s.Currency, LicenseKey: s.LicenseKey, Status: s.Status,
		RenewsAt: license.Timestamp(s.RenewsAt), CreatedAt: license.Timestamp(s.CreatedAt)}
}

// customerSubscriptions: GET subscriptions.php → the customer's subscriptions.
func (a *API) customerSubscriptions(ctx context.Context, c *customerCall) (any, error) {
	subs, err := a.customer.Subscriptions(ctx, c.p)
	if err != nil {
		return nil, err
	}
	out := make([]wire.CustomerSubscription, 0, len(subs))
	for i := range subs {
		out = append(out, customerSubView(&subs[i]))
	}
	return &wire.CustomerSubscriptionsReply{Success: true, Subscriptions: out}, nil
}

// customerCancel: POST subscriptions.php {id, action: "cancel"}.
func (a *API) customerCancel(ctx context.Context, c *customerCall) (any, error) {
	action, err := c.param("action")
	if err != nil {
		return nil, err
	}
	if action != "cancel" {
		return nil, apperr.InvalidField("action", `must be "cancel"`)
	}
	id, ok, err := c.f.Int("id")
	if err != nil {
		return nil, err
	}
	if !ok {
		if q := c.q.Get("id"); q != "" {
			if id, err = strconv.ParseInt(q, 10, 64); err != nil {
				return nil, edge.BadType("id", "an integer")
			}
			ok = true
		}
	}
	if !ok {
		return nil, apperr.Missing("id")
	}
	sub, err := a.customer.CancelSubscription(ctx, c.p, c.ip, id)
	if err != nil {
		return nil, err
	}
	return &wire.CustomerCancelReply{Success: true, Message: "Subscription cancelled; the license runs to the end of the paid period.",
		Subscription: customerSubView(sub)}, nil
}
