package clientapi

import (
	"net/http"
	"strings"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/wire"
)

// publicPlan is a plan or level as the public price list shows it.
func publicPlan(p *commerce.Plan) wire.Plan { return p.Wire() }

// pricing: GET app/pricing.php?app_id=[&type=levels|plans] (public, plain):
// the active subscription levels and plans, in the owner's order.
func (a *API) pricing(w http.ResponseWriter, r *http.Request) {
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
	typ := q.Get("type")
	if typ != "" && typ != "levels" && typ != "plans" {
		a.Error(w, r, apperr.InvalidField("type", "must be levels or plans"))
		return
	}
	ps, err := a.commerce.Pricing(r.Context(), appID, "")
	if err != nil {
		a.Error(w, r, err)
		return
	}
	levels, plans := []wire.Plan{}, []wire.Plan{}
	for i := range ps {
		if ps[i].Kind == commerce.KindLevel {
			levels = append(levels, publicPlan(&ps[i]))
		} else {
			plans = append(plans, publicPlan(&ps[i]))
		}
	}
	res := &wire.PricingReply{Success: true} // a nil list is left out (omitzero), an empty one sent as []
	if typ != "plans" {
		res.Levels = levels
	}
	if typ != "levels" {
		res.Plans = plans
	}
	edge.WriteJSON(w, http.StatusOK, res)
}
