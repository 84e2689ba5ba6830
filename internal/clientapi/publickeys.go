package clientapi

import (
	"net/http"

	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/wire"
)

// publicKeys serves GET /api/app/public-keys.php: every public key an app
// may pin, license-file keys (Ed25519) first, then reply keys (RSA), each
// sorted by kid, active and announced ones alike. Public: the keys are
// public and the same for every app of this server.
func (a *API) publicKeys(w http.ResponseWriter, r *http.Request) {
	res := &wire.PublicKeysReply{Success: true, Keys: []wire.PublicKey{}}
	if set := a.LicenseKeys(); set != nil {
		for _, k := range set.Keys {
			res.Keys = append(res.Keys, wire.PublicKey{Kid: k.ID, Alg: wire.AlgEd25519, Use: wire.UseLicenseFile,
				PublicKey: string(k.PublicPEM), SPKISHA256: k.SPKISHA256, Active: k == set.Active})
		}
	}
	if set := a.Signing(); set != nil {
		for _, k := range set.Keys {
			res.Keys = append(res.Keys, wire.PublicKey{Kid: k.ID, Alg: wire.AlgRSASHA256, Use: wire.UseReply,
				PublicKey: string(k.PublicPEM), SPKISHA256: k.SPKISHA256, Active: k == set.Active})
		}
	}
	edge.WriteJSON(w, http.StatusOK, res)
}
