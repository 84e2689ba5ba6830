package edge

import (
	"errors"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/licensefile"
)

// FileSigner returns the license.FileSigner of the active license-file key
// (SetLicenseKeys), or nil when no key is loaded, which IssueFile reports
// as an internal error: the surfaces that issue license files (client,
// portal, admin) share this one signer.
func (e *Edge) FileSigner() license.FileSigner {
	set := e.LicenseKeys()
	if set == nil || set.Active == nil {
		return nil
	}
	k := set.Active
	return func(c licensefile.Claims) (string, string, error) {
		if k.Private == nil {
			return "", "", errors.New("the active license-file key has no private half")
		}
		c.Kid = k.ID
		text, err := licensefile.Sign(c, k.Private)
		return k.ID, text, err
	}
}
