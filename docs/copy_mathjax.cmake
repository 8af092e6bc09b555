# Copies the part of MathJax 2 that the Doxygen pages use into the HTML output,
# so that formulas render with no fetch from the network (docs/Doxyfile:
# MATHJAX_VERSION = MathJax_2, MATHJAX_FORMAT = SVG, MATHJAX_RELPATH = mathjax).
#
#   cmake -DMATHJAX=/usr/share/javascript/mathjax -DDEST=<html>/mathjax -P docs/copy_mathjax.cmake
#
# MATHJAX is Debian's libjs-mathjax (2.7.9). What is copied (about 2.5 MB of 54):
#   MathJax.js                       the loader the pages reference
#   jax/input/TeX, jax/element/mml   the TeX input and the internal MathML it builds
#   jax/output/SVG: config.js, jax.js, autoload/, fonts/TeX/
#                                    the SVG output with its TeX font data (glyphs as
#                                    paths: no web fonts, so fonts/HTML-CSS is not needed)
#   extensions/*.js, extensions/TeX/ tex2jax (the page's config), the TeX extensions
#                                    autoloaded by macros (AMSmath, ...), menu and zoom
#   localization/en/                 the messages MathJax shows
# Not copied: the other input and output jax, the other SVG fonts, config/, and
# extensions/FontWarnings.js (HTML-CSS output only) and extensions/HelpDialog.js
# (the menu's help dialog, which links to external sites).
if(NOT MATHJAX OR NOT DEST)
  message(FATAL_ERROR "copy_mathjax.cmake: pass -DMATHJAX=<mathjax root> -DDEST=<directory>")
endif()
if(NOT EXISTS "${MATHJAX}/MathJax.js")
  message(FATAL_ERROR "copy_mathjax.cmake: ${MATHJAX}/MathJax.js not found: install the Debian package "
                      "libjs-mathjax (scripts/setup.sh does)")
endif()
file(REMOVE_RECURSE "${DEST}")
file(MAKE_DIRECTORY "${DEST}")
file(COPY "${MATHJAX}/MathJax.js" DESTINATION "${DEST}")
foreach(dir jax/input/TeX jax/element/mml jax/output/SVG/autoload jax/output/SVG/fonts/TeX extensions/TeX localization/en)
  get_filename_component(parent "${DEST}/${dir}" DIRECTORY)
  file(COPY "${MATHJAX}/${dir}" DESTINATION "${parent}")
endforeach()
file(COPY "${MATHJAX}/jax/output/SVG/config.js" "${MATHJAX}/jax/output/SVG/jax.js" DESTINATION "${DEST}/jax/output/SVG")
file(GLOB extensions "${MATHJAX}/extensions/*.js")
list(FILTER extensions EXCLUDE REGEX "/(FontWarnings|HelpDialog)\\.js$")
file(COPY ${extensions} DESTINATION "${DEST}/extensions")
