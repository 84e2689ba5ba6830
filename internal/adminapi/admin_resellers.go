package adminapi

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/reseller"
	"github.com/keyward/keyward/wire"
)

// resellerView is a reseller as the admin API shows it (never its token).
func resellerView(r *reseller.Reseller) wire.Reseller {
	return wire.Reseller{ID: r.ID, AppID: r.AppID, Name: r.Name, Email: r.Email, TokenHint: r.TokenHint,
		Balance: r.Balance, Products: reseller.Products(r.Products), Status: r.Status, CreatedAt: license.Timestamp(r.CreatedAt),
		UpdatedAt: license.Timestamp(r.UpdatedAt)}
}

// parseProducts decodes a products list: a JSON array of {id, name,
// key_type, duration_value?, max_devices?, price}. Unknown fields are
// refused, so a misspelt term is not silently dropped.
func parseProducts(raw json.RawMessage) ([]reseller.Product, error) {
	var ps []reseller.Product
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ps); err != nil || dec.More() {
		return nil, apperr.InvalidField("products",
			"must be a list of {id, name, key_type, duration_value, max_devices, price} with whole-number terms and prices")
	}
	return reseller.CheckProducts(ps)
}

// products reads the optional products field (absent or null: none given).
func (c *adminCall) products() (*[]reseller.Product, error) {
	raw, ok := c.f["products"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	ps, err := parseProducts(raw)
	return &ps, err
}

// getResellers: GET resellers.php?app_id= lists the app's resellers with
// their balances; with id, one with its activity (ledger, newest first;
// cursor, limit); with action=activity, every reseller's activity.
func (a *API) getResellers(ctx context.Context, c *adminCall) (any, error) {
	before, err := queryInt(c, "cursor")
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	id := c.q.Get("id")
	if id == "" && c.q.Get("action") != "activity" {
		if c.q.Get("action") != "" {
			return nil, apperr.InvalidField("action", "use activity, or none")
		}
		rs, err := a.sellers.List(ctx, c.appID)
		if err != nil {
			return nil, err
		}
		out := make([]wire.Reseller, len(rs))
		for i := range rs {
			out[i] = resellerView(&rs[i])
		}
		return wire.ResellerListReply{Success: true, Resellers: out}, nil
	}
	es, next, err := a.sellers.Activity(ctx, c.appID, id, before, int(limit))
	if err != nil {
		return nil, err
	}
	res := wire.ResellerActivityReply{Success: true, Activity: reseller.LedgerEntries(es)}
	if next != 0 {
		res.NextCursor = cursorString(next)
	}
	if id != "" {
		r, err := a.sellers.Get(ctx, c.appID, id)
		if err != nil {
			return nil, err
		}
		v := resellerView(r)
		res.Reseller = &v
	}
	return res, nil
}

// postResellers: POST resellers.php creates a reseller {name, email?,
// products?} and answers its token once; with action (query or body):
// topup {id, amount, reason?}, adjust {id, amount, reason}, rotate_token
// {id} (a new token, answered once), enable {id}, disable {id}.
func (a *API) postResellers(ctx context.Context, c *adminCall) (any, error) {
	action, err := c.param("action")
	if err != nil {
		return nil, err
	}
	if action == "" || action == "create" {
		in := reseller.CreateInput{AppID: c.appID}
		if in.Name, err = c.f.Str("name"); err != nil {
			return nil, err
		}
		if in.Email, err = c.f.Str("email"); err != nil {
			return nil, err
		}
		ps, err := c.products()
		if err != nil {
			return nil, err
		} else if ps != nil {
			in.Products = *ps
		}
		r, tok, err := a.sellers.Create(ctx, c.actor, in)
		if err != nil {
			return nil, err
		}
		return wire.ResellerReply{Success: true, Reseller: resellerView(r), Token: tok}, nil
	}
	id, err := c.required("id")
	if err != nil {
		return nil, err
	}
	var r *reseller.Reseller
	var tok string
	switch action {
	case "topup", "adjust":
		amount, ok, err := c.f.Int("amount")
		if err != nil {
			return nil, err
		} else if !ok {
			return nil, apperr.Missing("amount")
		}
		reason, err := c.f.Str("reason")
		if err != nil {
			return nil, err
		}
		if action == "topup" {
			r, err = a.sellers.TopUp(ctx, c.actor, c.appID, id, amount, reason)
		} else {
			r, err = a.sellers.Adjust(ctx, c.actor, c.appID, id, amount, reason)
		}
		if err != nil {
			return nil, err
		}
	case "rotate_token":
		if r, tok, err = a.sellers.RotateToken(ctx, c.actor, c.appID, id); err != nil {
			return nil, err
		}
	case "enable", "disable":
		if r, err = a.sellers.SetEnabled(ctx, c.actor, c.appID, id, action == "enable"); err != nil {
			return nil, err
		}
	default:
		return nil, apperr.InvalidField("action", "use create, topup, adjust, rotate_token, enable or disable")
	}
	return wire.ResellerReply{Success: true, Reseller: resellerView(r), Token: tok}, nil
}

// putReseller: PUT resellers.php {id, name?, email?, products?} changes
// what is given.
func (a *API) putReseller(ctx context.Context, c *adminCall) (any, error) {
	id, err := c.required("id")
	if err != nil {
		return nil, err
	}
	var u reseller.Update
	for _, f := range []struct {
		name string
		dst  **string
	}{{"name", &u.Name}, {"email", &u.Email}} {
		if raw, ok := c.f[f.name]; ok && string(raw) != "null" {
			v, err := c.f.Str(f.name)
			if err != nil {
				return nil, err
			}
			*f.dst = &v
		}
	}
	if u.Products, err = c.products(); err != nil {
		return nil, err
	}
	r, err := a.sellers.Update(ctx, c.actor, c.appID, id, u)
	if err != nil {
		return nil, err
	}
	return wire.ResellerReply{Success: true, Reseller: resellerView(r)}, nil
}

// deleteReseller: DELETE resellers.php {id} removes a reseller, its token
// and its ledger; the keys it sold stay (they become the owner's) and the
// audit log keeps its history.
func (a *API) deleteReseller(ctx context.Context, c *adminCall) (any, error) {
	id, err := c.required("id")
	if err != nil {
		return nil, err
	}
	if err := a.sellers.Delete(ctx, c.actor, c.appID, id); err != nil {
		return nil, err
	}
	return wire.SuccessReply{Success: true}, nil
}
