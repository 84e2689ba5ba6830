package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/wire"
)

// TokenPrefix starts every personal access token: "kwp_" and 43 base64url
// characters (256 random bits).
const TokenPrefix = "kwp"

// Token is a personal access token as listed: never the secret itself.
type Token struct {
	ID         string
	UserID     string
	Name       string
	Hint       string // the first characters, to recognise it in a list
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// TokenStore reads personal access tokens; only the SHA-256 of a token is
// stored.
type TokenStore interface {
	// TokenByHash returns the token with that hash and its admin.
	TokenByHash(ctx context.Context, hash string) (*Token, *User, error)
	Tokens(ctx context.Context, userID string) ([]Token, error)
	// TouchToken sets a token's last use (bookkeeping, not audited).
	TouchToken(ctx context.Context, id string, at time.Time) error
}

// TokenTx changes personal access tokens in a Tx.
type TokenTx interface {
	// InsertToken stores t with the SHA-256 hash of its secret
	// (ErrConflict when the hash is taken).
	InsertToken(ctx context.Context, t *Token, hash string) error
	// RevokeToken marks userID's token id revoked at at, keeping an earlier
	// revocation's time (ErrNotFound when the admin has no such token).
	RevokeToken(ctx context.Context, userID, id string, at time.Time) error
}

// touchEvery is how stale a token's last use may be before a request
// writes it again, so a busy script does not write on every call.
const touchEvery = time.Minute

var (
	errTokenRevoked = apperr.New(apperr.Forbidden, wire.CodeTokenRevoked, "This access token has been revoked.")
	// ErrNeedsSignIn refuses credential management through an access token.
	ErrNeedsSignIn = apperr.New(apperr.Forbidden, wire.CodeTokenNotAllowed,
		"Access tokens cannot manage credentials (password, e-mail, two-factor, tokens); sign in with your password.")
)

func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// MintToken creates a personal access token for p, named name, and returns
// its secret (shown once). Only a password sign-in may mint tokens.
func (s *Service) MintToken(ctx context.Context, p *Principal, ip, name string) (string, *Token, error) {
	if p.ViaToken() {
		return "", nil, ErrNeedsSignIn
	}
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 100 {
		return "", nil, apperr.InvalidField("name", "1 to 100 characters")
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, apperr.Wrap(err, "token randomness")
	}
	secret := TokenPrefix + "_" + base64.RawURLEncoding.EncodeToString(raw)
	now := s.now().UTC()
	t := &Token{ID: uuid.NewString(), UserID: p.UserID, Name: name, Hint: secret[:len(TokenPrefix)+5], CreatedAt: now}
	err := s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertToken(ctx, t, hashToken(secret)); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(p.Actor(ip), now, "token.create", "", t.ID, map[string]any{"name": name}))
	})
	if err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// Tokens lists p's access tokens, revoked ones included.
func (s *Service) Tokens(ctx context.Context, p *Principal) ([]Token, error) {
	return s.store.Tokens(ctx, p.UserID)
}

// RevokeToken revokes one of p's tokens; a revoked token is refused at once.
func (s *Service) RevokeToken(ctx context.Context, p *Principal, ip, id string) error {
	now := s.now().UTC()
	err := s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.RevokeToken(ctx, p.UserID, id, now); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(p.Actor(ip), now, "token.revoke", "", id, nil))
	})
	return apperr.NotFoundAs(err, "Token")
}

// verifyPAT authenticates a personal access token by its hash.
func (s *Service) verifyPAT(ctx context.Context, tok string) (*Principal, error) {
	t, u, err := s.store.TokenByHash(ctx, hashToken(tok))
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errUnauthorized
	} else if err != nil {
		return nil, err
	}
	if t.RevokedAt != nil {
		return nil, errTokenRevoked
	}
	now := s.now().UTC()
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= touchEvery {
		if err := s.store.TouchToken(ctx, t.ID, now); err != nil {
			return nil, err
		}
	}
	return &Principal{UserID: u.ID, Username: u.Username, Operator: u.Operator, TokenID: t.ID, TokenName: t.Name}, nil
}
