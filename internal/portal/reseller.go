package portal

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/reseller"
	"github.com/keyward/keyward/wire"
)

// resellerCall is one authenticated reseller request.
type resellerCall struct {
	c  *reseller.Caller
	ip string
	f  edge.Fields
	q  url.Values
}

// resellerHandler answers a reseller request.
type resellerHandler func(ctx context.Context, rc *resellerCall) (any, error)

// resellerMethods routes one reseller path by HTTP method.
type resellerMethods map[string]resellerHandler

var errResellerUnauthorized = apperr.New(apperr.Unauthenticated, wire.CodeUnauthorized, "Missing or invalid reseller token.")

// resellerRoute registers a reseller API path, one method pattern per
// method: the bearer token is a reseller's (kwr_…), the body a size-limited
// JSON object.
func resellerRoute(a *API, path string, m resellerMethods) []edge.Route {
	var ms []string
	for k := range m {
		ms = append(ms, k)
	}
	sort.Strings(ms)
	var rs []edge.Route
	for _, method := range ms {
		h := m[method]
		rs = append(rs, edge.Route{Pattern: method + " " + path, Auth: edge.ResellerToken, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res, err := a.serveReseller(w, r, h)
			if err != nil {
				a.Error(w, r, err)
				return
			}
			edge.WriteJSON(w, http.StatusOK, res)
		})})
	}
	return rs
}

func (a *API) serveReseller(w http.ResponseWriter, r *http.Request, h resellerHandler) (any, error) {
	tok := edge.BearerToken(r)
	if tok == "" {
		return nil, errResellerUnauthorized
	}
	caller, err := a.sellers.Authenticate(r.Context(), tok)
	if err != nil {
		return nil, err
	}
	body, err := edge.ReadBody(w, r, edge.AdminBodyLimit)
	if err != nil {
		return nil, err
	}
	f, err := edge.ParseFields(body)
	if err != nil {
		return nil, err
	}
	return h(r.Context(), &resellerCall{c: caller, ip: a.ClientIP(r), f: f, q: r.URL.Query()})
}

// page reads the cursor and limit query parameters.
func (rc *resellerCall) page() (int64, int, error) {
	var out [2]int64
	for i, name := range []string{"cursor", "limit"} {
		if v := rc.q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return 0, 0, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid query parameter "+name+": must be a non-negative integer.")
			}
			out[i] = n
		}
	}
	return out[0], int(out[1]), nil
}

// resellerMe: GET me.php → the reseller (name, balance, products) and its app.
func (a *API) resellerMe(ctx context.Context, rc *resellerCall) (any, error) {
	r := rc.c.Reseller
	return &wire.ResellerMeReply{Success: true,
		Reseller: wire.ResellerSelf{ID: r.ID, Name: r.Name, Email: r.Email, Status: r.Status, Balance: r.Balance,
			Products: reseller.Products(r.Products), TokenHint: r.TokenHint, CreatedAt: license.Timestamp(r.CreatedAt)},
		App: wire.ResellerApp{ID: rc.c.App.ID, Name: rc.c.App.Name}}, nil
}

// resellerKeys: GET keys.php[?status=&cursor=&limit=] → the reseller's own
// keys, oldest first.
func (a *API) resellerKeys(ctx context.Context, rc *resellerCall) (any, error) {
	after, limit, err := rc.page()
	if err != nil {
		return nil, err
	}
	keys, next, err := a.sellers.Keys(ctx, rc.c, license.Status(rc.q.Get("status")), after, limit)
	if err != nil {
		return nil, err
	}
	return &wire.KeyListReply{Success: true, Keys: license.AdminViews(keys, a.sellers.Now()), NextCursor: cursorOf(next)}, nil
}

// resellerPostKeys: POST keys.php {product, count} generates keys and pays
// for them; ?action=ban (or body action) {license_key, reason?} bans one of
// the reseller's own keys.
func (a *API) resellerPostKeys(ctx context.Context, rc *resellerCall) (any, error) {
	action := rc.q.Get("action")
	if action == "" {
		var err error
		if action, err = rc.f.Str("action"); err != nil {
			return nil, err
		}
	}
	now := a.sellers.Now()
	switch action {
	case "", "generate":
		product, err := rc.f.Str("product", "product_id")
		if err != nil {
			return nil, err
		}
		count, ok, err := rc.f.Int("count")
		if err != nil {
			return nil, err
		} else if !ok {
			return nil, apperr.Missing("count")
		}
		if count < 1 || count > reseller.MaxBatch {
			return nil, apperr.InvalidField("count", "must be 1 to "+strconv.Itoa(reseller.MaxBatch))
		}
		g, err := a.sellers.Generate(ctx, rc.c, rc.ip, strings.TrimSpace(product), int(count))
		if err != nil {
			return nil, err
		}
		return &wire.ResellerGenerateReply{Success: true, Keys: license.AdminViews(g.Keys, now), Charged: g.Charged, Balance: g.Balance}, nil
	case "ban":
		lk, err := rc.f.Key("license_key")
		if err != nil {
			return nil, err
		}
		reason, err := rc.f.Str("reason")
		if err != nil {
			return nil, err
		}
		k, err := a.sellers.Ban(ctx, rc.c, rc.ip, lk, reason)
		if err != nil {
			return nil, err
		}
		return &wire.KeyReply{Success: true, Key: k.AdminView(now)}, nil
	}
	return nil, apperr.InvalidField("action", "use ban, or none to generate")
}

// resellerLedger: GET ledger.php[?cursor=&limit=] → the balance and its
// history, newest first.
func (a *API) resellerLedger(ctx context.Context, rc *resellerCall) (any, error) {
	before, limit, err := rc.page()
	if err != nil {
		return nil, err
	}
	es, next, err := a.sellers.Ledger(ctx, rc.c, before, limit)
	if err != nil {
		return nil, err
	}
	return &wire.ResellerLedgerReply{Success: true, Balance: rc.c.Reseller.Balance, Entries: reseller.LedgerEntries(es), NextCursor: cursorOf(next)}, nil
}

// cursorOf is the next_cursor of a page: null at the end.
func cursorOf(next int64) *string {
	if next == 0 {
		return nil
	}
	s := strconv.FormatInt(next, 10)
	return &s
}
