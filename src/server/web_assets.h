// The dashboard's files (web/ in the source tree), built into the binary by
// scripts/cmake/embed_files.cmake: `muster server` serves them under /ui/
// with no file beside it and nothing fetched from elsewhere.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace muster::server {

struct WebAsset {
  const char* path;  // "/index.html", "/app.js", ...
  const unsigned char* data;
  size_t size;
  std::string_view bytes() const { return {reinterpret_cast<const char*>(data), size}; }
};

// Every file, in web/'s order (generated).
const std::vector<WebAsset>& WebAssets();

// The file at `path` ("/" is "/index.html"), or null.
const WebAsset* FindWebAsset(std::string_view path);

// Its media type, by extension ("text/html; charset=utf-8", ...).
const char* WebMediaType(std::string_view path);

}  // namespace muster::server
