#include "auth/munge.h"

#include <munge.h>

#include <cstdlib>
#include <memory>

namespace muster::auth {
namespace {

struct CtxDeleter {
  void operator()(munge_ctx_t c) const { munge_ctx_destroy(c); }
};
using Ctx = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>, CtxDeleter>;

StatusOr<Ctx> NewCtx(const std::string& socket) {
  Ctx ctx(munge_ctx_create());
  if (!ctx) return Internal("munge: out of memory");
  if (munge_ctx_set(ctx.get(), MUNGE_OPT_SOCKET, socket.c_str()) != EMUNGE_SUCCESS) {
    return Internal("munge: cannot use socket " + socket);
  }
  return ctx;
}

std::string Why(munge_ctx_t ctx, munge_err_t e) {
  const char* s = munge_ctx_strerror(ctx);
  return s ? s : munge_strerror(e);
}

}  // namespace

StatusOr<std::string> MungeEncode(const std::string& socket, std::string_view payload) {
  ASSIGN_OR_RETURN(Ctx ctx, NewCtx(socket));
  char* cred = nullptr;
  const munge_err_t e = munge_encode(&cred, ctx.get(), payload.data(), static_cast<int>(payload.size()));
  if (e != EMUNGE_SUCCESS) {
    const std::string why = Why(ctx.get(), e);
    std::free(cred);
    return Status(e == EMUNGE_SOCKET ? StatusCode::kUnavailable : StatusCode::kInternal,
                  "munge: cannot get a credential from munged at " + socket + ": " + why);
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

StatusOr<MungeCredential> MungeDecode(const std::string& socket, std::string_view credential) {
  // A MUNGE credential is "MUNGE:" base64 ":" and a few hundred bytes;
  // anything far larger is not one.
  if (credential.size() > 16384 || credential.substr(0, 6) != "MUNGE:") {
    return Unauthenticated("munge: not a MUNGE credential");
  }
  ASSIGN_OR_RETURN(Ctx ctx, NewCtx(socket));
  const std::string text(credential);
  void* buf = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  const munge_err_t e = munge_decode(text.c_str(), ctx.get(), &buf, &len, &uid, &gid);
  std::unique_ptr<void, decltype(&std::free)> payload(buf, &std::free);
  switch (e) {
    case EMUNGE_SUCCESS:
      break;
    case EMUNGE_SOCKET:
    case EMUNGE_TIMEOUT:
      return Status(StatusCode::kUnavailable,
                    "munge: the server cannot reach munged at " + socket + ": " + Why(ctx.get(), e));
    case EMUNGE_CRED_EXPIRED:
      return Unauthenticated("munge: the credential has expired (check the clocks)");
    case EMUNGE_CRED_REWOUND:
      return Unauthenticated("munge: the credential is from the future (check the clocks)");
    case EMUNGE_CRED_REPLAYED:
      return Unauthenticated("munge: the credential was used before (replayed)");
    default:
      return Unauthenticated("munge: invalid credential (" + Why(ctx.get(), e) + ")");
  }
  MungeCredential out;
  out.uid = uid;
  out.gid = gid;
  if (buf && len > 0) out.payload.assign(static_cast<const char*>(buf), static_cast<size_t>(len));
  time_t encoded = 0;
  if (munge_ctx_get(ctx.get(), MUNGE_OPT_ENCODE_TIME, &encoded) == EMUNGE_SUCCESS) out.encoded_at_s = encoded;
  return out;
}

}  // namespace muster::auth
