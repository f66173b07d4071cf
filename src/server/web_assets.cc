#include "server/web_assets.h"

namespace muster::server {

const WebAsset* FindWebAsset(std::string_view path) {
  if (path.empty() || path == "/") path = "/index.html";
  for (const WebAsset& a : WebAssets()) {
    if (path == a.path) return &a;
  }
  return nullptr;
}

const char* WebMediaType(std::string_view path) {
  auto ends = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

}  // namespace muster::server
