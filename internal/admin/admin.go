// Package admin manages the people who use the admin API: their accounts,
// bcrypt-hashed passwords, the JWTs they sign in with, two-factor codes,
// personal access tokens, and their roles on each app (who may do what).
package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/journal"
	"github.com/keyward/keyward/internal/lockout"
	"github.com/keyward/keyward/wire"
)

// User is an admin account.
type User struct {
	ID           string
	Username     string
	Email        string
	PasswordHash string
	// Operator admins manage the installation: webhooks for every app and the
	// whole audit log. Admins created from the command line are operators;
	// team members added by an app's owner are not.
	Operator bool
	// TokenGen is the generation of the JWTs still valid: a password change
	// moves it on, ending every other sign-in.
	TokenGen int64
	// TOTPSecret is the confirmed two-factor secret ("" = 2FA off);
	// TOTPPending one enrolled but not yet confirmed with a code.
	TOTPSecret  string
	TOTPPending string
	CreatedAt   time.Time
}

// Store is the persistence admin needs: the reads, the claims of a second
// factor (each one conditional update, usable once), and InTx for every
// audited change.
type Store interface {
	AdminByUsername(ctx context.Context, username string) (*User, error)
	AdminByID(ctx context.Context, id string) (*User, error)
	// AdminForJWT returns the admin id and whether the JWT jti was signed out.
	AdminForJWT(ctx context.Context, id, jti string) (*User, bool, error)
	CountAdmins(ctx context.Context) (int, error)
	// ClaimTOTPStep records step as the user's last accepted TOTP step if it
	// is later than the stored one, reporting whether it was.
	ClaimTOTPStep(ctx context.Context, userID string, step int64) (bool, error)
	// UseRecoveryCode marks an unused recovery code (by hash) used,
	// reporting whether there was one.
	UseRecoveryCode(ctx context.Context, userID, hash string, at time.Time) (bool, error)

	TokenStore
	MemberStore
	// ServerSecret returns the installation-wide secret called name, storing
	// generate's value first when there is none (first writer wins across
	// processes).
	ServerSecret(ctx context.Context, name string, generate func() (string, error)) (string, error)
	// InTx runs fn in one write transaction, committed when fn returns nil
	// and rolled back otherwise.
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is a write transaction of admin accounts, their sign-outs, access
// tokens and app teams. Each change writes its audit entry through the
// embedded Journal, so the entry commits or rolls back with the change.
type Tx interface {
	// AdminByIDForUpdate reads an admin and locks its row until the
	// transaction ends (SQLite's single writer serialises write
	// transactions; PostgreSQL takes the row lock), so a change computed
	// from it is never lost to, nor undoes, another change of the account.
	AdminByIDForUpdate(ctx context.Context, id string) (*User, error)
	// InsertAdmin stores u (ErrConflict when the username is taken).
	InsertAdmin(ctx context.Context, u *User) error
	// UpdateAdmin stores u's email, password hash, token generation and TOTP
	// secrets, and replaces its recovery code hashes unless codes is nil
	// (empty: none). A missing admin is ErrNotFound.
	UpdateAdmin(ctx context.Context, u *User, codes []string) error
	// RevokeJWT signs out the JWT jti until it expires; signing one out
	// again is no error.
	RevokeJWT(ctx context.Context, jti string, expires time.Time) error

	TokenTx
	MemberTx
	journal.Journal
}

// Config holds the admin service's tunables.
type Config struct {
	BcryptCost int           // default bcrypt.DefaultCost+2 (12)
	TokenTTL   time.Duration // JWT lifetime; default 12 h
	// Guard counts failed sign-ins (nil: no lockouts); SignIn applies per
	// username, SignInIP per client IP.
	Guard    *lockout.Guard
	SignIn   lockout.Policy
	SignInIP lockout.Policy
}

// Service signs admins in and verifies their tokens.
type Service struct {
	store Store
	now   func() time.Time
	cfg   Config
	key   []byte
	dummy []byte // a bcrypt hash compared against when the username is unknown
}

// Password policy: bcrypt reads at most 72 bytes, so longer passwords are
// refused rather than silently truncated.
const (
	MinPassword = 8
	MaxPassword = 72
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_.@-]{3,64}$`)

// ErrInvalidCredentials is the one answer to every failed sign-in.
var ErrInvalidCredentials = apperr.New(apperr.Unauthenticated, wire.CodeInvalidCredentials, "Invalid username or password.")

var errUnauthorized = apperr.New(apperr.Unauthenticated, wire.CodeUnauthorized, "Missing or invalid bearer token.")

// Token audiences: a bearer JWT has none; the first step of a two-factor
// sign-in carries audStep1 and is good for nothing but totp.php.
const audStep1 = "keyward-2fa"

// New returns a Service whose JWT key is the installation's (created on first use).
func New(ctx context.Context, store Store, now func() time.Time, cfg Config) (*Service, error) {
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = 12
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = 12 * time.Hour
	}
	key, err := store.ServerSecret(ctx, "jwt_key", func() (string, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return hex.EncodeToString(b), err
	})
	if err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(key)
	if err != nil {
		return nil, errors.New("stored jwt_key is not hex")
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("dummy-password-for-timing"), cfg.BcryptCost)
	if err != nil {
		return nil, err
	}
	return &Service{store: store, now: now, cfg: cfg, key: raw, dummy: dummy}, nil
}

// ValidatePassword applies the password policy.
func ValidatePassword(p string) error {
	if len(p) < MinPassword || len(p) > MaxPassword {
		return apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid field password: must be 8 to 72 bytes.")
	}
	return nil
}

// CreateUser adds an operator admin (the command line and the first start
// create these). It returns MISSING_FIELDS or CONFLICT.
func (s *Service) CreateUser(ctx context.Context, actor audit.Actor, username, password string) (*User, error) {
	u, err := s.newUser(username, password)
	if err != nil {
		return nil, err
	}
	u.Operator = true
	err = s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertAdmin(ctx, u); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, u.CreatedAt, "admin.create", "", username, nil))
	})
	if errors.Is(err, apperr.ErrConflict) {
		return nil, apperr.New(apperr.Conflict, wire.CodeConflict, "An admin with that username already exists.")
	}
	return u, err
}

// ValidateNew applies the username and password policies to a new admin,
// so that a caller can refuse bad ones before doing anything else.
func ValidateNew(username, password string) error {
	if !usernameRE.MatchString(username) {
		return apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid field username: 3 to 64 letters, digits or _ . @ -.")
	}
	return ValidatePassword(password)
}

// newUser checks a new admin's username and password and hashes the latter.
func (s *Service) newUser(username, password string) (*User, error) {
	if err := ValidateNew(username, password); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.cfg.BcryptCost)
	if err != nil {
		return nil, apperr.Wrap(err, "hash password")
	}
	return &User{ID: uuid.NewString(), Username: username, PasswordHash: string(hash), CreatedAt: s.now().UTC()}, nil
}

// HasUsers reports whether any admin exists.
func (s *Service) HasUsers(ctx context.Context) (bool, error) {
	n, err := s.store.CountAdmins(ctx)
	return n > 0, err
}

// LoginResult is a successful password check: a bearer token, or, with
// two-factor on, the step-1 token to complete through CompleteTOTP.
type LoginResult struct {
	Token       string
	Requires2FA bool
	Step1Token  string
}

// Login checks a username and password, from the client address ip. An
// unknown username costs the same bcrypt comparison as a wrong password.
// Each attempt is reserved (counted) per username and per IP before the
// password is compared and given back when it is right, so however many
// arrive at once, no more are compared than the lockout allows; a locked
// username or IP is TOO_MANY_ATTEMPTS without comparing the password.
func (s *Service) Login(ctx context.Context, username, password, ip string) (*LoginResult, error) {
	name := strings.ToLower(username)
	if len(name) > 64 {
		name = name[:64]
	}
	subs := []lockout.Subject{{Scope: "admin", ID: name, Policy: s.cfg.SignIn}, {Scope: "admin-ip", ID: ip, Policy: s.cfg.SignInIP}}
	res, err := s.cfg.Guard.Reserve(ctx, subs...)
	if err != nil {
		return nil, err
	}
	u, err := s.store.AdminByUsername(ctx, username)
	if err != nil && !errors.Is(err, apperr.ErrNotFound) {
		return nil, res.Abandon(ctx, err)
	}
	hash := s.dummy
	if u != nil {
		hash = []byte(u.PasswordHash)
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || u == nil {
		return nil, ErrInvalidCredentials // the reservation stays: a failure
	}
	if err := res.GiveBack(ctx, subs[0]); err != nil {
		return nil, err
	}
	if u.TOTPSecret != "" {
		step1, err := s.sign(u, audStep1, step1TTL)
		return &LoginResult{Requires2FA: true, Step1Token: step1}, err
	}
	tok, err := s.sign(u, "", s.cfg.TokenTTL)
	return &LoginResult{Token: tok}, err
}

// sign issues a JWT for u with audience aud ("" for a bearer token).
func (s *Service) sign(u *User, aud string, ttl time.Duration) (string, error) {
	now := s.now()
	claims := jwt.MapClaims{"iss": "keyward", "sub": u.ID, "name": u.Username, "gen": u.TokenGen,
		"jti": uuid.NewString(), "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	if aud != "" {
		claims["aud"] = aud
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.key)
}

// maxTokenLen bounds a bearer token: the JWTs keyward signs are some 300
// characters and access tokens shorter, and a JWT's header and claims are
// decoded as JSON before its signature is checked.
const maxTokenLen = 4096

// parse verifies a JWT's signature, issuer and expiry and that its audience
// is aud ("" = none). Only the text sign wrote is accepted: strict decoding
// refuses the other base64 spellings of the same signature (the unused low
// bits of its last character set), which the default decoder takes.
func (s *Service) parse(token, aud string) (jwt.MapClaims, error) {
	if len(token) > maxTokenLen {
		return nil, errUnauthorized
	}
	parsed, err := jwt.Parse(token, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer("keyward"), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.now), jwt.WithStrictDecoding())
	if err != nil {
		return nil, errUnauthorized
	}
	mc, _ := parsed.Claims.(jwt.MapClaims)
	got, _ := mc.GetAudience()
	if (aud == "" && len(got) != 0) || (aud != "" && (len(got) != 1 || got[0] != aud)) {
		return nil, errUnauthorized
	}
	return mc, nil
}

// Signed reports whether token is a current bearer JWT signed by this
// installation, without reading the database: the request limiter uses it
// to give signed-in admins their higher ceiling.
func (s *Service) Signed(token string) bool {
	_, err := s.parse(token, "")
	return err == nil
}

// Verify authenticates a bearer token: a personal access token (by its
// hash) or a JWT whose signature, issuer, expiry and generation hold, that
// was not signed out, of an admin who still exists. A revoked access token
// is refused with 403 TOKEN_REVOKED; anything else that fails is 401.
func (s *Service) Verify(ctx context.Context, token string) (*Principal, error) {
	if strings.HasPrefix(token, TokenPrefix+"_") {
		return s.verifyPAT(ctx, token)
	}
	mc, err := s.parse(token, "")
	if err != nil {
		return nil, err
	}
	sub, _ := mc["sub"].(string)
	jti, _ := mc["jti"].(string)
	gen, _ := mc["gen"].(float64)
	exp, _ := mc.GetExpirationTime()
	u, revoked, err := s.store.AdminForJWT(ctx, sub, jti)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errUnauthorized
	} else if err != nil {
		return nil, err
	}
	if revoked || jti == "" || int64(gen) != u.TokenGen {
		return nil, errUnauthorized
	}
	return &Principal{UserID: u.ID, Username: u.Username, Operator: u.Operator, JTI: jti, Expires: exp.Time}, nil
}
